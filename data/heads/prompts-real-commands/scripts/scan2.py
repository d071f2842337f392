import subprocess,sys,os,re,json
M='/work/.mirror'
def git(d,*a):
    return subprocess.run(['git','-C',d]+list(a),capture_output=True,text=True).stdout
def lic(d):
    names=git(d,'ls-tree','--name-only','HEAD').split('\n')
    for n in names:
        if re.match(r'(?i)^(licen[cs]e|copying|unlicense)(\.md|\.txt)?$',n):
            t=git(d,'show','HEAD:'+n)[:3000]
            if re.search(r'Apache License',t) and 'Version 2.0' in t: return 'Apache-2.0',n
            if re.search(r'MIT License|Permission is hereby granted, free of charge',t): return 'MIT',n
            if 'unencumbered software released into the public domain' in t: return 'Unlicense',n
            if re.search(r'BSD 3-Clause|Redistribution and use in source and binary forms',t):
                return ('BSD-3-Clause' if 'Neither the name' in t or '3-Clause' in t else 'BSD-2-Clause'),n
            if re.search(r'ISC License|Permission to use, copy, modify, and/or distribute',t): return 'ISC',n
            if 'CC0' in t or 'Creative Commons Zero' in t: return 'CC0-1.0',n
            if 'Attribution 4.0 International' in t: return 'CC-BY-4.0',n
            if re.search(r'dual-licensed under Apache 2.0',t): return 'Apache-2.0',n
            return 'OTHER:'+t[:80].replace('\n',' '),n
    return None,None
PAT=re.compile(r'(\.claude/commands/.*\.md$|\.github/prompts/.*\.prompt\.md$|\.cursor/commands/.*\.md$|\.gemini/commands/.*\.toml$|\.opencode/commands?/.*\.md$|\.codex/prompts/.*\.md$|(^|/)commands/.*\.(md|toml)$|(^|/)prompts/.*\.prompt\.md$)')
out={}
for r in sys.argv[1:]:
    d=f'{M}/{r}/repo'
    if not os.path.isdir(d): continue
    c=git(d,'rev-parse','HEAD').strip()
    l,ln=lic(d)
    allf=git(d,'ls-tree','-r','--name-only','HEAD').split('\n')
    files=[f for f in allf if PAT.search(f) and 'node_modules' not in f]
    if not files and re.search(r'(?i)command|prompt',r):
        files=[f for f in allf if f.endswith('.md') and not re.search(r'(?i)(^|/)(readme|license|contributing|changelog|claude|agents|code_of_conduct|security)\.md$',f) and not f.startswith('.github/')]
    out[r]={'commit':c,'licence':l,'licfile':ln,'files':files}
    print(f"{r:45s} {str(l)[:40]:40s} n={len(files)}")
json.dump(out,open('/tmp/pr/scan.json','a'))
