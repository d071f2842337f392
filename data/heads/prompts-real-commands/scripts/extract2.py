import json,re,hashlib,os,subprocess
src=open('/tmp/pr/extract.py').read()
# reuse functions
pre=src.split('seen=set(); cands=[]')[0].replace("good=[l.split()[0] for l in open('/tmp/pr/good.txt')]","good=[]")
exec(pre)
old=json.load(open('cands.json'))
seen=set(x['h'] for x in old)
def mk(r,f):
    d=f'{M}/{r}/repo'; c=git(d,'rev-parse','HEAD').strip(); l,ln=lic(d)
    t=git(d,'show',f'HEAD:{f}'); b=body(f,t).strip()
    if len(b)<40 or SECRET.search(b): return None
    key=re.sub(r'\W+','',b.lower())[:400]; h=hashlib.md5(key.encode()).hexdigest()
    if h in seen: return None
    seen.add(h)
    na=sum(1 for ch in b if ord(ch)>127)/max(1,len(b))
    return dict(repo=r.replace('+','/',1),path=f,commit=c,licence=l,state=cap(b),nonascii=round(na,3),kws=[],h=h,len=len(b))
new=[]
def ls(r): return git(f'{M}/{r}/repo','ls-tree','-r','--name-only','HEAD').split('\n')
for r in ['AI1411+taurin','galarzafrancisco+pet-project','gpsilv4+agent-template','SpIvanM+split-first-tdd-agent-orchestration-framework','IliaDaR+opencode-mobile']:
    fs=[f for f in ls(r) if PAT.search(f)]
    n=0
    for f in fs:
        if n>=6: break
        it=mk(r,f)
        if it and it['nonascii']<0.05: new.append(it); n+=1
picks={'jleechanorg+claude-commands':['arch.md','code-standards.md'],
 '99xAgency+claude-octopus':['staged-review.md','security.md'],
 'Grimblaz+copilot-orchestra':['.github/prompts/release.prompt.md'],
 'tomzx+claude-commands':['commands/pr-review.md','commands/generate-pr-description.md'],
 'd-o-hub+github-template-ai-agents':['.gemini/commands/adr.toml','.opencode/commands/self-fix-loop.md'],
 'AsiaOstrich+universal-dev-standards':['code-review.md','refactor.md','changelog.md','api-design.md'],
 'AI-Corner+copilot-forge':['forge-deploy.prompt.md','forge-tdd.prompt.md'],
 'imrim12+geminikit':['.gemini/commands/think.toml','.gemini/commands/solve.toml'],
 'SynaptixLabs+scaffold':['qa-gate.md','e2e.md'],
 'aig787+agpm':['local-deps/snippets/commands/commit.md','local-deps/snippets/commands/squash.md','local-deps/snippets/commands/update-docstrings.md','local-deps/snippets/commands/pr-self-review.md','local-deps/snippets/commands/fact-check-docs.md'],
}
for r,names in picks.items():
    fs=[f for f in ls(r) if PAT.search(f) or r.startswith('jleechanorg')]
    for nm in names:
        cand=[f for f in fs if f==nm or f.endswith('/'+nm)]
        cand.sort(key=lambda f:(not f.startswith('.claude/commands') and not f.startswith('skills/commands'), len(f)))
        for f in cand:
            it=mk(r,f)
            if it: new.append(it); break
for i,x in enumerate(new): x['id']=400+i
json.dump(new,open('cands2.json','w'))
out=''
for x in new:
    s=x['state']
    if len(s)>900: s=s[:700]+'\n[...]\n'+s[-200:]
    out+=f"##### {x['id']} | {x['repo']} | {x['path']} | len={x['len']} na={x['nonascii']}\n{s}\n\n"
open('e.txt','w').write(out); print(len(new), len(out))
