import json
src=open('/tmp/pr/extract2.py').read()
pre=src.split('new=[]')[0]
exec(pre)
for x in json.load(open('cands2.json')): seen.add(x['h'])
new=[]
picks=[('Chouteau49+python-starter-template','.github/prompts/write-tests.prompt.md'),('Chouteau49+python-starter-template','.github/prompts/refactor-code.prompt.md'),
('SpIvanM+split-first-tdd-agent-orchestration-framework','.gemini/commands/test.toml'),('SpIvanM+split-first-tdd-agent-orchestration-framework','.gemini/commands/split.toml'),
('hikarubw+claude-commands','.claude/commands/push.md'),('imrim12+geminikit','.gemini/commands/research.toml'),('jleechanorg+claude-commands','.claude/commands/advice.md'),
('ganlulingyun+r4w','.claude/commands/status.md'),('aig787+agpm','local-deps/snippets/commands/squash.md'),('Shen-Ming-Hong+singular-blockly','.codex/prompts/speckit.specify.md'),
('Contextfy+Kit','.opencode/command/commit.md'),
('ChrisGVE+MunsellSpace','.claude/commands/tm/analyze-complexity/analyze-complexity.md'),('ChrisGVE+MunsellSpace','.claude/commands/tm/expand/expand-task.md'),('ChrisGVE+MunsellSpace','.claude/commands/tm/add-task/add-task.md'),
]+[('AI1411+taurin','.claude/commands/'+n) for n in ['commit.md','create-issue.md','create-pr.md','execute-issue.md','release.md']]
for r,f in picks:
    it=mk(r,f)
    if it: new.append(it)
    else: print('skip',r,f)
for i,x in enumerate(new): x['id']=500+i
json.dump(new,open('cands3.json','w'))
out=''
for x in new:
    s=x['state']
    if len(s)>900: s=s[:700]+'\n[...]\n'+s[-200:]
    out+=f"##### {x['id']} | {x['repo']} | {x['path']} | len={x['len']} na={x['nonascii']}\n{s}\n\n"
open('e3.txt','w').write(out); print(len(new), len(out))
