import csv,re,json
csv.field_size_limit(10**9)
SRC='/tmp/prompts-scratch/wheel/inspect_evals/swe_lancer/data/all_swelancer_tasks.csv'
rows=list(csv.DictReader(open(SRC,encoding='utf-8')))

DROP_LINE=[
 r"^If you haven.t already, check out our \[contributing guidelines\]",
 r"^_{3,}\s*$", r"^-{3,}\s*$",
 r"^\*\*Version Number:\*\*", r"^\*\*Reproducible in", r"^\*\*If this was caught",
 r"^\*\*Email or phone of affected tester", r"^\*\*Logs:\*\*", r"^\*\*Notes/Photos/Videos:\*\*",
 r"^\*\*Expensify/Expensify Issue URL:\*\*", r"^\*\*Issue reported by:\*\*", r"^\*\*Slack conversation",
 r"^Issue reported by:", r"^Slack conversation", r"^View all open jobs on GitHub", r"^Which of our officially supported platforms",
 r"^\s*- \[[ xX]\] ", r"^\*\*Issue found when executing PR", r"^Issue found when executing PR", r"^\*\*Reproducible in staging",
 r"^Version Number:", r"^Reproducible in", r"^If this was caught", r"^Email or phone of affected tester", r"^Logs:", r"^Notes/Photos/Videos:",
 r"^Expensify/Expensify Issue URL:", r"^Upwork Automation", r"^\[View all open jobs on GitHub\]", r"^#+\s*Screenshots/Videos", r"^Break down in numbered steps", r"^Describe what you think should.ve happened", r"^Describe what actually happened", r"^\*\*(Current|Desired)\*\*\s*$", r"^\s*Add any screenshot/video evidence", r"^Platforms?:",
]
MEDIA=re.compile(r"(!\[[^\]]*\]\([^)]*\)|<img[^>]*>|<video[^>]*>.*?</video>|https?://(user-images\.githubusercontent\.com|github\.com/(Expensify/App/assets|user-attachments/assets))\S*|https?://\S+\.(mov|mp4|png|jpe?g|gif|webm)\b\S*)",re.I|re.S)

def clean_title(t):
    t=re.sub(r"\[(HOLD for payment[^\]]*|PAID|\$\s*\d[\d,.]*|CRITICAL|Due for payment[^\]]*|LOW|MEDIUM|HIGH)\]\s*","",t,flags=re.I)
    t=re.sub(r"^(MEDIUM|LOW|HIGH|CRITICAL)\s*:\s*","",t.strip())
    t=re.sub(r"\s*-?\s*\[\$\d+\]\s*","",t)
    return re.sub(r"\s+"," ",t).strip(" -:")

def clean_desc(d):
    d=d.replace("\\n","\n").replace("\r","")
    d=re.sub(r"<details>.*?</details>","",d,flags=re.S|re.I)
    d=re.sub(r"<details>.*$","",d,flags=re.S|re.I)
    d=re.sub(r"<!--.*?-->","",d,flags=re.S)
    # cut everything from the platforms section on (metadata) -- only if Expected/Actual already seen or section appears after them
    d=MEDIA.sub("",d)
    out=[]
    for line in d.split("\n"):
        s=line.strip()
        if any(re.match(p,s,re.I) for p in DROP_LINE): continue
        if re.match(r"^#+\s*(Platforms?|Workaround)\s*:?\s*$",s,re.I): out.append("@@CUT@@"); continue
        out.append(line.rstrip())
    txt="\n".join(out)
    # drop sections starting at Platforms/Workaround header until next header
    parts=re.split(r"(?m)^@@CUT@@$",txt)
    keep=[parts[0]]
    for p in parts[1:]:
        m=re.search(r"(?m)^#+ ",p)
        keep.append(p[m.start():] if m else "")
    txt="\n".join(keep)
    txt=re.sub(r"</?(img|video|source|details|summary|ul|ol|li|div|span|a|br|p|strong|b|i|em|h[1-6]|table|tr|td|th|tbody|thead|sub|sup|hr|blockquote|kbd)\b[^>]*>","",txt)           # leftover html tags
    txt=re.sub(r"\n{3,}","\n\n",txt).strip()
    return txt

def trim(txt,limit=900,floor=200):
    if len(txt)<=limit:
        lines=txt.split("\n")
        while lines and (re.match(r"^\s*#+\s",lines[-1]) or not lines[-1].strip()): lines.pop()
        return "\n".join(lines)
    cut=txt[:limit]
    # prefer sentence/line boundary
    cands=[m.end() for m in re.finditer(r"(?<=[.!?])\s|\n",cut)]
    cands=[c for c in cands if c>=floor]
    if not cands: return None
    res=cut[:cands[-1]].rstrip()
    lines=res.split("\n")
    while lines and (re.match(r"^\s*#+\s",lines[-1]) or re.match(r"^\s*\*\*[^*]+:?\*\*:?\s*$",lines[-1]) or not lines[-1].strip()):
        lines.pop()
    return "\n".join(lines).rstrip()

def build(row):
    t=clean_title(row['title']); d=clean_desc(row['description'])
    body=trim(d)
    if body is None: return None,t,d
    return (t+"\n\n"+body).strip(),t,d

if __name__=="__main__":
    seen=set(); out=[]
    for i,row in enumerate(rows):
        num=re.match(r"\d+",row['question_id']).group()
        if num in seen: continue
        seen.add(num)
        s,t,d=build(row)
        out.append({"qid":row['question_id'],"csv_row":i+2,"issue":num,"state":s,"full_len":len(d)})
    json.dump(out,open('/tmp/prompts-scratch/work/cands.json','w'),indent=1,ensure_ascii=False)
    print(len(out), sum(o['state'] is None for o in out))
