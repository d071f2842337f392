import json,re
from collections import Counter
c={x['id']:x for x in json.load(open('cands.json'))+json.load(open('cands2.json'))+json.load(open('cands3.json'))}
lab={}
for line in open('labels.txt'):
    line=line.rstrip('\n')
    if not line or line.startswith('#'): continue
    p=line.split(' ',5)
    i=int(p[0])
    lab[i]=None if p[1]=='X' else p[1:]
miss=[i for i in c if i not in lab]
print('missing',miss)
rows=[];seen=set();per=Counter()
B={'T':True,'F':False}
for i in sorted(c):
    l=lab.get(i)
    if not l: continue
    x=c[i]
    if not x['licence']: print('nolic',i); continue
    if per[x['repo']]>=5: print('cap',i,x['repo']); continue
    s=x['state']
    if s in seen: print('dup',i); continue
    seen.add(s); per[x['repo']]+=1
    r=dict(state=s,read_only=B[l[0]],design=B[l[1]],review=B[l[2]],specified=B[l[3]],repo=x['repo'],path=x['path'],commit=x['commit'],licence=x['licence'])
    if len(l)>4 and l[4].startswith('h|'):
        r['hard']=True; r['why']=l[4][2:]
    rows.append(r)
with open('/work/main/data/heads/prompts-real-commands/examples.jsonl','w') as f:
    for r in rows: f.write(json.dumps(r,ensure_ascii=False)+'\n')
print(len(rows),'repos',len(per))
