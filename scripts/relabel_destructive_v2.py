"""Relabels the `destructive` command sets for version 2 of the built-in (loss, not change).

    python scripts/relabel_destructive_v2.py [--write]

The sets under data/heads/commands-* were labelled for `destructive@1` (any change). An item
labelled true for version 1 stays true for version 2 when a version-2 rule finds it destructive
(shell/policy.json) or when it names one of KEEP (each decided by hand against the version-2
text: it loses something the tools at hand cannot recover); every other one is relabelled
false and keeps its version-1 label as `"destructive@1": true`. Run once on 2026-12-07 (402
items relabelled); running it again changes nothing. Without --write it lists what it would
relabel. `commands-everyday` was written for version 2 and is not read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from system1_gateway.shell import structure

DATA = Path(__file__).resolve().parents[1] / "data" / "heads"
# The version-1 destructive items no version-2 rule decides that do lose something (by hand).
KEEP = """dynamodb update-item|fly secrets set|gh secret set|terraform apply -replace|apt autoremove --purge|apt remove --purge
Add-Content -Path C:|git push origin +main:release|sed -i ''|Remove-ADUser|Write(file_path|adb logcat -c|adb uninstall|age -d -o
argocd app delete|argocd app sync shop-api --prune|schedule-key-deletion|--mode Complete|db:migrate VERSION=0|bq load --replace
cat header.txt > README.md|pip freeze > requirements.txt|certbot delete|conda env export|consul kv delete|convert logo.png
cp -f dist/app.js|cp .env.example .env|cp config.example.yml|grep -v backup.sh|crontab mycron.txt|_delete_by_query|deleteUser
echo "" > .env|echo $(date|ed -s config.ini|ex -sc|firestore:delete|flyway clean|fsck -y|gh api -X DELETE|git checkout src/app.py
gpg --batch --yes --decrypt -o .env|gpg --delete-secret-keys|DeleteUser|copy /Y config.prod.json|keytool -delete|kind delete cluster
liquibase rollback-count|migrate -path db/migrations|minikube delete|--collection products --drop|$out|mysql shop < dumps
nomad job stop -purge|npm run db:reset|knex seed:run|--accept-data-loss|op item delete|empty trash|pgbench -i|tinker --execute
doctrine:schema:update --force|Remove-Item -Recurse -Force .\\dist|printf '127.0.0.1|0042_drop_legacy_tables|flushdb|loaddata
migrate payments zero|Cart.objects.filter|boto3|LPOP|reg delete|/MIR|scp .env.production|scp nginx.conf root@web1
delete-generic-password|.restore /tmp|ssh-keygen -t rsa|tar -xzf release-2.3.1.tar.gz -C /opt/app|tee package.json|tmutil delete
vagrant destroy|vault kv delete|vault kv destroy|vault kv metadata delete|vercel env pull|vim -c|wrangler d1 execute|wsl --unregister
zip -d release.zip|git reset --hard HEAD|*** Delete File|rm -rf dist coverage .next|delete_file|github.delete_branch|DELETE FROM feature_flags
FLUSHDB|kubectl delete deployment|"overwrite": true|DROP COLUMN|git clean -fdx|podman system reset""".replace("\n", "|").split("|")


def main() -> int:
    write = "--write" in sys.argv
    flipped = kept = 0
    for path in sorted(p for p in DATA.glob("commands-*/examples.jsonl") if p.parent.name != "commands-everyday"):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            row = json.loads(line)
            if not row["destructive"] or structure.certain(structure.plan(row["state"], 2)):
                continue
            if any(k in row["state"] for k in KEEP):
                kept += 1
                continue
            flipped += 1
            row["destructive"], row["destructive@1"] = False, True
            lines[i] = json.dumps(row, ensure_ascii=False)
            if not write:
                print("relabel", path.parent.name, i, row["state"][:100].replace("\n", "\\n"))
        if write:
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"relabelled {flipped}, kept {kept}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
