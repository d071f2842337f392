import subprocess,re,json,hashlib,os,tomllib
M='/work/.mirror'
def git(d,*a): return subprocess.run(['git','-C',d]+list(a),capture_output=True,text=True).stdout
good=[l.split()[0] for l in open('/tmp/pr/good.txt')]
scan={}
# rescan for files/licence
import importlib.util
exec(open('/tmp/pr/scan2.py').read().split('out={}')[0])
KW=['commit','review','pr','explain','plan','design','architect','refactor','test','fix','bug','debug','release','deploy','doc','changelog','security','audit','optimi','perf','spec','issue','clean','migrat','todo','onboard','analy']
def strip_fm(t):
    if t.startswith('---'):
        m=re.match(r'^---\s*\n.*?\n---\s*\n',t,re.S)
        if m: t=t[m.end():]
    return t.strip('\n')
def body(path,t):
    if path.endswith('.toml'):
        try: return tomllib.loads(t).get('prompt','')
        except Exception: return ''
    return strip_fm(t)
def cap(t,n=6000):
    if len(t)<=n: return t
    cut=t[:n]; i=cut.rfind('\n'); return cut[:i] if i>0 else cut
SECRET=re.compile(r'[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[a-z]{2,}|ghp_[A-Za-z0-9]{20}|sk-[A-Za-z0-9]{20}|AKIA[0-9A-Z]{16}|xox[bp]-')
seen=set(); cands=[]
for r in good:
    d=f'{M}/{r}/repo'; c=git(d,'rev-parse','HEAD').strip(); l,ln=lic(d)
    allf=git(d,'ls-tree','-r','--name-only','HEAD').split('\n')
    files=[f for f in allf if PAT.search(f) and 'node_modules' not in f]
    if not files and re.search(r'(?i)command|prompt',r):
        files=[f for f in allf if f.endswith('.md') and not re.search(r'(?i)(^|/)(readme|license|contributing|changelog|claude|agents|code_of_conduct|security)\.md$',f) and not f.startswith('.github/')]
    files=[f for f in files if not re.search(r'(?i)(^|/)(agents?|skills?|templates?|examples?|tests?|fixtures?)/',f) or '/commands/' in f]
    items=[]
    for f in files:
        t=git(d,'show',f'HEAD:{f}')
        b=body(f,t).strip()
        if len(b)<40: continue
        if SECRET.search(b): continue
        nonascii=sum(1 for ch in b if ord(ch)>127)/max(1,len(b))
        key=re.sub(r'\W+','',b.lower())[:400]
        h=hashlib.md5(key.encode()).hexdigest()
        if h in seen: continue
        name=os.path.basename(f).lower()
        kws=[k for k in KW if k in name]
        items.append(dict(repo=r.replace('+','/',1),path=f,commit=c,licence=l,state=cap(b),nonascii=round(nonascii,3),kws=kws,h=h,len=len(b)))
    # choose up to 5: diversity of keyword, prefer english, mix lengths
    items.sort(key=lambda x:(x['nonascii']>0.05, -len(x['kws'])>0 and 0, x['path']))
    chosen=[];usedk=set()
    for it in items:
        if len(chosen)>=5: break
        if it['nonascii']>0.05: continue
        k=it['kws'][0] if it['kws'] else None
        if k and k not in usedk: chosen.append(it); usedk.add(k)
    for it in items:
        if len(chosen)>=5: break
        if it not in chosen and it['nonascii']<=0.05: chosen.append(it)
    for it in items:
        if len(chosen)>=3: break
        if it not in chosen: chosen.append(it)
    for it in chosen: seen.add(it['h']); cands.append(it)
    print(r, len(items), len(chosen))
for i,c in enumerate(cands): c['id']=i
json.dump(cands,open('/tmp/pr/cands.json','w'))
print(len(cands))
