"""A "safe" rule is sound: no command it certifies runs a command or writes a
file it was not meant to. For every safe rule in shell/policy.json, its own `match` examples are
varied — an assignment prefix that changes what runs, the same through `env`/`export`/a plain
assignment, the command's name redefined earlier in the command (alias, function, `hash -p`),
each option of the tool that runs a command or writes a file (from the tools' manuals) and its
abbreviations, a word built at run time where an option can stand, an option's value that looks
like a read subcommand, operands beside `--help` — and no variant may stay certain-safe (a rule's
p = 0 with no engine). The everyday reads stay certain-safe.

The variants are generated deterministically from the table, so a rule added to policy.json is
covered by the generic variants at once; tool-specific dangerous options are listed below."""

from __future__ import annotations

import shlex

import pytest

from system1_gateway.shell import structure
from system1_gateway.shell.policy import policy
from system1_gateway.shell.read import read

SAFE = [r for r in policy().rules if r.verdict == "safe"]

# Assignments that change what a command runs (shell start-up files, the loader, the search
# path, pagers, editors, git's helpers, interpreters' start-up code, a tool's own *_COMMAND).
ASSIGNMENTS = [
    "LD_PRELOAD=./x.so", "LD_LIBRARY_PATH=.", "PATH=.:$PATH", "BASH_ENV=./x.sh", "ENV=./x.sh", "ZDOTDIR=.",
    "GIT_EXTERNAL_DIFF='rm -rf ~;:'", "GIT_PAGER='rm -rf ~'", "GIT_SSH_COMMAND=./x", "GIT_CONFIG_PARAMETERS=x",
    "GIT_DIR=./x", "PAGER='sh -c x'", "MANPAGER=./x", "EDITOR=./x", "VISUAL=./x", "LESSOPEN='|./x %s'",
    "LESS='+!x'", "PYTHONSTARTUP=./x.py", "PYTHONPATH=.", "NODE_OPTIONS='--require ./x.js'", "PERL5OPT=-Mx",
    "RUBYOPT=-rx", "KUBECONFIG=./x", "RIPGREP_CONFIG_PATH=./x", "TF_CLI_ARGS=-auto-approve", "DEPLOY_COMMAND=./x",
    "PROMPT_COMMAND=./x",
]
# The same through the other ways of setting it.
SETTERS = [
    lambda a, c: f"{a} {c}",
    lambda a, c: f"env {a} {c}",
    lambda a, c: f"sudo {a} {c}",
    lambda a, c: f"export {a}; {c}",
    lambda a, c: f"{a}; {c}",
    lambda a, c: f"declare -x {a} && {c}",
    lambda a, c: f"{a} bash -c {shlex.quote(c)}",
]
REDEFINE = [
    lambda n, c: f"alias {n}='rm -rf ~/w'; {c}",
    lambda n, c: f"{n}() {{ command rm -rf ~/w; }}; {c}",
    lambda n, c: f"function {n} {{ shred -u ~/.ssh/id_ed25519; }}\n{c}",
    lambda n, c: f"hash -p ./x {n}; {c}",
]

# Per tool: options (and option shapes) that run a command or write a file, written from the
# tools' own manuals; `{}` stands for the rest of the example. A variant is the example with the
# option appended (git's global options go right after `git`).
DANGEROUS = {
    "git": ["--output=src/main.py", "--outp=src/main.py", "--upload-pack=./x", "--receive-pack=./x", "--exec=./x",
            "--template=./t", "--config=core.fsmonitor=./x", "--forc", "--dele", "--mirr", "--force-create",
            "ext::sh", "'ext::sh -c x'"],
    "git global": ["-c core.fsmonitor=./x", "-c core.pager=./x", "-c protocol.ext.allow=always",
                   "--config-env=core.pager=EVIL", "--exec-path=./x", "-c alias.status=!x"],
    "kubectl": ["--kubeconfig ./x", "--kubeconfig=./k", "--helm-command=./x", "--enable-exec", "--enable-alpha-plugins"],
    "helm": ["--post-renderer ./x", "--post-renderer=./x", "--output-dir src", "--kubeconfig=./k"],
    "terraform": ["-out=src/main.py", "-out src/main.py"],
    "rsync": ["-e 'sh -c x'", "--rsh=./x", "--rsync-path=./x", "--write-batch=src/main.py", "--read-batch=b"],
    "netlify": ["--prod-if-unlocked", "--prod", "--pro"],
    "brew": ["--force"],
    "systemctl": [],
    "find": ["-delete", "-fprint src/main.py", "-fls src/main.py", "-fprintf src/main.py %p"],
    "sfdisk": ["--delete", "-A", "--part-type", "-N 1", "--wipe always", "--backup-file x"],
    "aws": ["--outfile src/main.py"],
    "rename": [],
    "pm2": [],
}
# Whole commands, per safe rule: the dangerous shapes of the tools it names that its examples
# do not reach (each written from the tool's manual; none is from another guard's tests).
COMMANDS = {
    "read-only-tool": [
        "sed -n '1e rm -rf ~' f", "sed 's/.*/rm -rf ~/e' f", "sed -f script.sed f", "sed --file=s f", "sed --fi=s f",
        "sed -n 'w src/main.py' /dev/null", "sed 's/a/b/w out' in", "sed -e p -e 'W out' f", "sed '$!N;e' f",
        "sed -n '/x/{e' f", "sed --in-pl=.bak 's/a/b/' f", "sed -ne 1e\\ x f", "sed --expression='1e x' f",
        "rg --pre ./x foo", "rg --pre=./x foo", "rg --hostname-bin=./x foo", "ugrep --filter='*:./x' foo",
        "ugrep --pager=./x foo", "ag --pager ./x foo", "ack --pager=./x foo", "ack --output='@{[system q(x)]}' foo",
        "uniq /dev/null ~/.bashrc", "uniq -c in.txt src/main.py", "xxd -r dump.hex src/main.py",
        "less '+!rm -rf ~' f", "less -o src/main.py f", "less --log-file=src/main.py f", "less --log-f=x f",
        "man -P 'rm -rf ~' ls", "man -Pcat ls", "man --pager=./x ls", "man --pag=./x ls", "man -H./x ls",
        "man -C ./x.conf ls", "info -o src/main.py ls", "info --output=x ls", "tree -o src/main.py", "tree -ao x",
        "bat --pager=./x f", "sort --compress-program=./x f", "sort --out=src/main.py f", "file -C -m magic",
        "ss -K dst 1.2.3.4", "awk 'BEGIN{system(\"rm -rf ~\")}'", "awk '{print > \"src/main.py\"}' f",
        "awk '{print | \"sh\"}' f", "awk -f prog.awk f", "gawk -l ./x '{}' f", "gawk --profile=src/main.py '{}' f",
        "ssh -o ProxyCommand='rm -rf ~' host", "ssh -oLocalCommand=x -oPermitLocalCommand=yes host",
        "ssh -F ./config host", "ssh-agent rm -rf ~", "sudo -e /etc/hosts", "ldd ./x", "open ./x.app",
        "open -a Terminal x.sh", "pytest --basetemp=$HOME", "pytest --basetemp ~", "pytest --junitxml=src/main.py",
        "pytest -o cache_dir=/etc", "pylint --init-hook='import os' x.py", "mypy --install-types", "jest --clearCache",
        "cloc --report-file=src/main.py .", "cloc -out=src/main.py .", "actionlint -shellcheck=./x",
        "journalctl --vac=1s", "journalctl --setup-keys", "ln --forc a b", "git-lfs prune", "git-lfs migrate import",
        "code --uninstall-extension ms-python.python", "bat cache --clear", "scc -o src/main.py",
        "o=--output=src/main.py; git diff $o", "ls; PATH=.; ls", "sudo -e f",
    ],
    "shell-string": ["ssh -o ProxyCommand=./x host ls", "ssh -F ./cfg host ls", "bash --rcfile ./x -i -c ls",
                     "su -s ./x -c ls root", "fish -C ./x -c ls", "fish --init-command=x -c ls",
                     "nix-shell -E 'x' --run ls", "npx -p x -c ls", "BASH_ENV=./x bash -c ls"],
    "help": ["rm -rf ~ /?", "rm -rf ~ --help", "rm --help -rf ~", "rm -rf ~ -- --help", "rm ./x --help",
             "git -c core.pager=./x push --help", "chmod -R 777 / --help", "find / -delete --help", "mv a b /?",
             "kubectl delete pod web-1 --help", "docker rm -f $(docker ps -aq) --help", "dd if=/dev/zero of=/dev/sda --help",
             "rmdir /?"],
    "git-read": ["git diff --output=src/main.py", "git log --output=$HOME/.bashrc", "git grep -O./x foo",
                 "git grep --open-files-in-pager=./x foo", "git archive -o src/main.py HEAD",
                 "git archive --output=src/main.py HEAD", "git bundle create src/main.py HEAD",
                 "git fetch --upload-pack=./x origin", "git clone -u ./x repo", "git clone --template=./t repo",
                 "git clone -c core.fsmonitor=./x repo", "git ls-remote --upload-pack=./x origin",
                 "git push --receive-pack=./x origin", "git push --exec=./x origin", "git push --forc origin main",
                 "git push --del origin x", "git fetch origin +main:main", "git remote update --prune",
                 "git worktree add -B main ../w HEAD~9", "git switch --force-create main origin/x",
                 "git fetch 'ext::sh -c x'", "git -c protocol.ext.allow=always clone 'ext::sh -c x' d",
                 "git format-patch -o src HEAD~1", "git init --template=./t"],
    "find-read": ["find . -delete", "find . -fprint src/main.py", "fd -e py --exec=rm", "fd -xrm", "bfs . -rm"],
    "docker-read": ["docker run -v ~:/h alpine", "docker run --volume=/:/h alpine", "docker build -o ~ .",
                    "docker build --output=type=local,dest=. .", "docker compose config -o src/main.py",
                    "docker run --entrypoint ./x alpine", "docker create --privileged alpine",
                    "docker run --mount type=bind,src=/,dst=/h alpine", "docker run --volumes-from x alpine",
                    "docker run --pid=host alpine", "docker build --iidfile src/main.py .",
                    "docker -H ssh://x run -v /:/h alpine", "podman run -v ~:/h alpine"],
    "kubectl-read": ["kubectl --kubeconfig ./k get pods", "kubectl kustomize --enable-exec .",
                     "kubectl kustomize --helm-command=./x --enable-helm .", "kubectl kustomize -o src/main.py ."],
    "helm-read": ["helm template . --post-renderer ./x", "helm template . --output-dir src", "helm --kubeconfig=./k list"],
    "iac-read": ["terraform plan -out=src/main.py", "terraform providers lock", "terraform providers mirror src"],
    "preview-deploy": ["netlify deploy --prod-if-unlocked --dir=dist", "vercel deploy --target production",
                       "vercel deploy --target=production", "netlify deploy --pro --dir=dist"],
    "cloud-read": ["aws ecr batch-delete-image --repository-name api --image-ids imageTag=x",
                   "aws iam attach-role-policy --role-name get --policy-arn arn:aws:iam::aws:policy/Admin",
                   "aws s3api get-object --bucket b --key k src/main.py", "aws s3api put-object --bucket list --key k",
                   "gh api -X DELETE repos/o/r", "gh api graphql -f query='mutation{deleteRepository}'",
                   "gh api repos/o/r --method=DELETE", "gh api repos/o/r/issues --input x.json",
                   "gh pr checkout 42 --force", "heroku config:edit -a app", "gcloud compute instances list --format=x "
                   "&& gcloud compute ssh vm --command=x", "rclone ls r: --password-command=./x",
                   "az vm run-command invoke --name list"],
    # (starting, stopping or enabling a unit loses nothing: service-lifecycle certifies those under version 2)
    "service-read": ["systemctl clean --what=state status", "systemctl set-property nginx status", "pm2 flush status",
                     "service nginx revert status", "systemctl -n 5 isolate status"],
    "service-lifecycle": ["systemctl clean --what=state nginx", "systemctl revert nginx", "systemctl -n 5 isolate rescue",
                          "systemctl soft-reboot", "service nginx clean", "systemctl restart nginx \"$OPTS\"",
                          "systemctl reboot --message restart"],
    "git-everyday-write": ["git rebase -x 'rm -rf ~' main", "git rebase --exec='rm -rf ~' main", "git rebase --exe=x main",
                           "git rebase -ix x main", "git pull --rebase -x x", "git reset --hard HEAD~1",
                           "git reset --merg ORIG_HEAD", "git rm -rf src", "git mv -f a b", "git rm --forc a"],
    "docker-lifecycle": ["docker compose down -v", "docker compose down --volumes", "docker compose -p x down -v",
                         "docker stop web && docker rm web", "docker compose down --volum"],
    "process-signal": ["kill -9 -1", "kill -- -1", "kill 1", "kill -s KILL -1"],
    "rename-dry-run": ["rename -n 's/a/system(\"x\")/e' *", "rename -n 's/a/@{[system q(x)]}/' *",
                       "rename -n 'system q(x)' *", "rename -n -e 'unlink' *"],
    "brew-dry-run": ["brew services -n stop x", "brew untap -n x --force"],
    "disk-read": ["sfdisk -l --delete /dev/sda 1", "sfdisk -d -A /dev/sda 1", "sfdisk -l -N 1 /dev/sda"],
    "rsync-dry-run": ["rsync -an -e 'sh -c x' a h:b", "rsync -n --rsh=./x a h:b", "rsync -n --write-batch=src/main.py a b"],
    "git-clean-dry-run": ["git -c core.fsmonitor=./x clean -n"],
    "git-restore-staged": ["git restore --staged --work app.py", "git -c core.fsmonitor=./x restore --staged a"],
    "git-new-branch": ["git checkout -b x --forc", "git switch -c x --disc", "git -c core.hooksPath=./h checkout -b x"],
}

# Everyday reads that must stay certain-safe (no engine call).
EVERYDAY = [
    "git status", "git log --oneline", "git log --oneline -5", "git diff HEAD~1", "git show HEAD:src/app.py",
    "ls -la", "cat README.md", "sed -n '1,20p' f", "sed -n '/start/,/end/p' f", "sed 's/a/b/g' f",
    "sed -E 's/(a|b)+/x/' f", "sed -n '$p' f", "rg foo src", "rg -n 'def main' --type py", "grep -rn TODO src/",
    "kubectl get pods", "kubectl get pods -A -o wide", "docker ps", "docker compose ps", "docker logs -f api",
    "GIT_PAGER=cat git log -5", "LANG=C ls", "LC_ALL=C sort -u names.txt", "NO_COLOR=1 git status",
    "awk '{print $1}' f", "awk '$3 > 100' f", "find . -name '*.py'", "rm --help", "git push --help",
    "docker rm --help", "aws s3 ls s3://bucket", "gh pr view 42", "systemctl status nginx", "terraform plan -out tf.plan",
    "helm list -A", "cat \"$FILE\"", "while read -r line; do echo \"$line\"; done < f", "git checkout -b feature/x",
    "pytest -q", "jq .name package.json", "head -50 src/app.py", "wc -l src/*.py", "git blame src/app.py",
    "less README.md", "man ls", "uniq -c names.txt", "tree -L 2", "ssh host uptime", "bash -c 'ls -la'",
]


def certified_harmless(command: str) -> bool:
    """The rules alone answer p = 0 (certain, no engine)."""
    answer = structure.ruled(command, 0.7)
    return answer is not None and answer["p_true"] == 0.0 and not answer["abstained"]


def variants(rule) -> list[str]:
    out: list[str] = []
    examples = [c for c in rule.raw["match"] if certified_harmless(c)]
    for example in examples:
        words = read(example).parts[0].words if read(example).parts else []
        name = words[0] if words and words[0] else example.split()[0]
        base = name.rsplit("/", 1)[-1]
        for assignment in ASSIGNMENTS:
            out.extend(setter(assignment, example) for setter in SETTERS)
        out.extend(redefine(name, example) for redefine in REDEFINE)
        if rule.id == "shell-string":
            continue
        if rule.id == "help":  # beside `--help` alone, a flag is not acted on: operands are
            out.extend([f"{example} -rf ~", f"{example} ./src", f"{example.replace('--help', '-- --help')} x",
                        f"{example} ~ /?", f"{example.replace('--help', '/?')} -rf ~"])
            continue
        for option in DANGEROUS.get(base, []):
            out.append(f"{example} {option}")
        if base == "git":
            rest = example.split(None, 1)[1]
            out.extend(f"git {option} {rest}" for option in DANGEROUS["git global"])
        # the destructive rules' own long flags, abbreviated (git, GNU getopt and argparse take them)
        for other in policy().by_command.get(base, []):
            if other.verdict == "destructive":
                for flag in other.flags_any:
                    if flag.startswith("--") and len(flag) > 5:
                        out.append(f"{example} {flag[:-1]}")
        if base not in ("ls", "cat", "echo", "cd", "mkdir", "sort", "grep", "pytest"):
            out.append(f"{example} \"$OPTS\"")
    out.extend(COMMANDS.get(rule.id, []))
    return out


@pytest.mark.parametrize("rule", SAFE, ids=[r.id for r in SAFE])
def test_no_variant_of_a_safe_rule_stays_certain_safe(rule):
    generated = variants(rule)
    assert generated, rule.id
    still = [c for c in generated if certified_harmless(c)]
    assert not still, f"{rule.id}: {len(still)} of {len(generated)} variants certified harmless: {still[:10]}"


def test_every_safe_rule_has_variants():
    total = sum(len(variants(r)) for r in SAFE)
    assert total > 2000, total
    for rule in SAFE:
        assert any(certified_harmless(c) for c in rule.raw["match"]), rule.id  # the examples themselves still hold


@pytest.mark.parametrize("command", EVERYDAY)
def test_everyday_reads_stay_certain_safe(command):
    assert certified_harmless(command), structure.plan(command).parts


def test_the_issue_examples_are_not_certified():
    for command in [
        "git -c core.fsmonitor='rm -rf ~' status", "GIT_EXTERNAL_DIFF='rm -rf ~;:' git diff",
        "git -c protocol.ext.allow=always fetch 'ext::sh -c rm% -rf% ~'", "BASH_ENV=./x.sh bash -c ls",
        "LD_PRELOAD=./x.so ls", "PATH=.:$PATH ls", "LESSOPEN='|rm -rf ~ %s' less f", "man -P 'rm -rf ~' ls",
        "sed -n '1e rm -rf ~' f", "sed 's/.*/rm -rf ~/e' f", "sed -f script f", "sed -n 'w src/main.py' /dev/null",
        "rg --pre 'rm -rf ~' x", "git diff --output=src/main.py", "uniq /dev/null ~/.bashrc", "rm -rf ~ /?",
        "alias ll='rm -rf'; ll ~/work", "aws ecr batch-delete-image --repository-name api --image-ids imageTag=x",
        "kubectl delete pod x --dry-run=none",
    ]:
        assert not certified_harmless(command), command


def test_a_doubted_part_is_shown_to_the_engine_with_what_changes_it():
    """The engine sees the assignment that can change what runs; the reason names the doubt."""
    plan = structure.plan("LD_PRELOAD=./x.so ls -la")
    assert plan.engine_texts == ["LD_PRELOAD=./x.so ls -la"]
    assert "does not certify" in plan.parts[0].verdict.why if plan.parts[0].verdict else True
    assert structure.plan("rm -rf ~ /?").parts[0].verdict.rule == "rm"  # the help rule doubted: the next rule decides
