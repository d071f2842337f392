# Builds examples.jsonl from hand-written prompts grouped by request kind.
# Each kind fixes the four labels; every prompt was written to fit its kind.
# Labels: (read_only, design, review, specified)
import json, os

KINDS = {
    "A_explain_spec":       (True,  False, False, True),
    "B_explain_vague":      (True,  False, False, False),
    "C_review_only_spec":   (True,  False, True,  True),
    "D_review_only_vague":  (True,  False, True,  False),
    "E_review_fix_spec":    (False, False, True,  True),
    "F_review_fix_vague":   (False, False, True,  False),
    "G_design_advice_spec": (True,  True,  False, True),
    "H_design_advice_vague":(True,  True,  False, False),
    "I_design_impl_spec":   (False, True,  False, True),
    "J_design_impl_vague":  (False, True,  False, False),
    "K_edit_spec":          (False, False, False, True),
    "L_edit_vague":         (False, False, False, False),
}

P = {k: [] for k in KINDS}

# ---------------------------------------------------------------- A: explain / locate / inspect, specified
P["A_explain_spec"] += [
    "What does the `lifecycle { prevent_destroy = true }` block in infra/modules/rds/main.tf actually protect against? Does it also stop a `terraform destroy` of the whole workspace?",
    "Where in the repo do we set CUDA_VISIBLE_DEVICES for the training jobs? I grepped train/ and found nothing, so it must be somewhere else.",
    "explain why rustc gives me `cannot borrow *self as mutable because it is also borrowed as immutable` at src/parser.rs:142 in `Parser::advance`. I want to understand the borrow, not a patch",
    "Why is the ingest-worker pod crashlooping? Here is the relevant part of `kubectl describe pod`:\n```\n    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n    Restart Count:  14\n    Limits:\n      memory:  512Mi\n    Requests:\n      memory:  256Mi\n```\nJust tell me what is going on, I'll change the manifests myself.",
    "How is the `--since` flag in cmd/logtail/main.go parsed? Does it accept durations like 90m or only RFC3339 timestamps?",
    "Which workflow in .github/workflows publishes our Docker image to GHCR, and what event triggers it?",
    "In firmware/src/uart.c, what baud rate divisor does `uart_init` compute for 115200 baud with a 16 MHz clock? Walk me through the arithmetic.",
    "can u explain what `#pragma omp parallel for reduction(+:energy)` does on line 88 of sim/md.cpp, i am new to openmp and the reduction part confuses me",
    "Why does services/api/Dockerfile copy requirements.txt and run pip install before copying the rest of the source? Someone asked me in standup and I didn't know.",
    "what is this go panic telling me? `panic: assignment to entry in nil map` goroutine 1 [running]: main.(*Registry).Add(...) /app/registry.go:41 +0x5c -- dont fix it, only explain why it happens",
    "Summarise what changed between tags v3.1.0 and v3.2.0 as a plain list here in chat. I'm not asking you to edit CHANGELOG.md.",
    "Why is `solve_ivp` with method RK45 so slow on the system in models/kinetics.py? I suspect stiffness but I'd like you to explain what that means for this particular system.",
    "Who last modified scripts/rotate_keys.sh and what did that commit message say? Use git log or blame, but don't change anything.",
    "I ran `terraform plan` in infra/envs/staging and got this:\n```\n  # aws_db_instance.main must be replaced\n-/+ resource \"aws_db_instance\" \"main\" {\n      ~ engine_version = \"14.7\" -> \"15.4\" # forces replacement\n        id             = \"staging-main\"\n```\nWhy would an engine_version change force replacement here? I'm not applying anything, I just want to understand it before the change window.",
    "Explain the design of the existing run-queue logic in kernel/sched.c: how are tasks picked and when does load balancing kick in?",
    "Summarise the review comments left on PR #77 so I know which ones are still unresolved. Just the list, please.",
    "What does 'false sharing' mean? A colleague used the term about the per-thread counters array in src/stats.c and I was too embarrassed to ask.",
    "how many replicas of the redis statefulset does k8s/overlays/prod end up with after kustomize patches are applied? just read the files and tell me",
]

# ---------------------------------------------------------------- B: explain, vague
P["B_explain_vague"] += [
    "why is it doing that again? it worked perfectly fine yesterday before the merge",
    "can you explain what that function does, the one that was failing in CI earlier",
    "Where's the config for the thing that keeps timing out? I can never find it.",
    "what does this error mean? I keep getting it whenever I run the script on my laptop",
    "how does the other pipeline handle retries? just explain it, I don't want any changes yet",
    "Which version are we on for that library again, the one that broke the build last week?",
    "whats the memory usage looking like on it now? just curious, please don't change anything",
    "Can you tell me why the numbers don't match? The totals are off somewhere between the two steps.",
    "Where is that flag defined, the one Marco mentioned in the meeting this morning?",
    "why did it get so slow after the last change? only an explanation please, no edits",
    "remind me how the thing we looked at on Friday works, I have completely lost the context",
    "Is this expected behaviour or not? I just want to know before I open an issue upstream.",
    "what are those warnings at the top of the output about? should i be worried about them",
]

# ---------------------------------------------------------------- C: review only, specified
P["C_review_only_spec"] += [
    "Review PR #1287, the Terraform change that moves the VPC peering into its own module. Leave your feedback here in chat and don't push anything.",
    "Is this Dockerfile OK for production?\n```\nFROM python:3.12\nCOPY . /app\nRUN pip install -r /app/requirements.txt\nUSER root\nCMD python /app/main.py\n```\nGive me a list of problems, I'll fix them myself.",
    "Audit src/alloc/arena.c for undefined behaviour and alignment bugs. Report findings with line numbers only; do not modify the file.",
    "Could you take a critical look at .github/workflows/deploy.yml? I'm worried about secrets leaking through the pull_request_target trigger. A written report is all I need.",
    "Does my Welford update in stats/running.py look numerically correct?\n```python\ndef update(self, x):\n    self.n += 1\n    d = x - self.mean\n    self.mean += d / self.n\n    self.m2 += d * (x - self.mean)\n```",
    "Check the last three commits on branch feat/shader-cache for anything that would break the Vulkan backend on Android. Don't change anything, just tell me.",
    "review this go code for race conditions pls, no edits:\n```go\nfunc (c *Cache) Get(k string) (v []byte, ok bool) {\n  c.mu.RLock()\n  v, ok = c.m[k]\n  c.mu.RUnlock()\n  if !ok {\n    c.mu.Lock()\n    c.m[k] = load(k)\n    c.mu.Unlock()\n  }\n  return\n}\n```",
    "Is the NetworkPolicy in k8s/base/netpol-db.yaml actually restricting ingress to pods from the api namespace only? I need a yes/no with reasoning before the security audit.",
    "Please critique the training loop in train/loop.py, specifically gradient accumulation, AMP loss scaling and where zero_grad is called. I suspect we accumulate wrong. Findings only.",
    "Review the diff between main and release/1.9 under cmd/ and tell me whether any change breaks backwards compatibility of the CLI flags. Verdict only, I'll write the release notes myself.",
    "Security audit of scripts/install.sh please. It gets piped from curl on users' machines, so look for unquoted variables, missing `set -euo pipefail` and temp-file races. Report only.",
    "How good is the C++ in engine/physics/broadphase.cpp? Rate it and list the top five issues; I'm deciding whether a refactor is worth it next quarter.",
    "Is PR #342 ready to merge? It bumps tokio from 1.28 to 1.38 and touches the runtime builder in src/main.rs. Tell me if you see any risk.",
    "look over notebooks/churn_eda.ipynb and tell me if there's any data leakage between the train and test splits. no edits",
    "Can you review the Ansible role in roles/postgres for idempotency problems? I'd like a list of tasks that would report 'changed' on every run.",
    "Sorry my english is not so good. Please review the function `crc16_ccitt` in drivers/crc.c, are polynomial and init value correct for XMODEM variant? Only answer, no change.",
    "Review commit 4f9e2ab on main, the one that changed the schedule of dags/billing_export.py. Was that change safe given the DAG has catchup=True?",
    "Evaluate whether the alert rules in monitoring/alerts/api.rules.yml would fire correctly. I think some `for:` durations are too short and a couple of expressions are wrong. Notes please.",
    "Sanity-check this one-liner before I run it on the prod box: `find /var/log/app -name '*.log' -mtime +7 -exec rm {} \\;` -- anything dangerous in it?",
    "Review CMakeLists.txt and cmake/*.cmake for old-style CMake anti-patterns like global include_directories and add_definitions. Only comments please, I'll do the edits.",
    "Is the unsafe block in `from_raw_parts_checked` (src/ffi/mod.rs) sound? Walk through the invariants and tell me whether a caller can violate any of them.",
    "pls critique the Dataset class in data/images.py -- is __getitem__ doing too much I/O, and are there bugs in how the transforms are applied? dont edit",
    "Code review for scenes/enemy/enemy_ai.gd: is the state machine correct, and are there per-frame allocations that will hurt on mobile? Comments only.",
    "Review dependabot PR #2210, which bumps numpy to 2.0. Will anything in analysis/ break because of the numpy 2 API changes? I want a verdict.",
    "I wrote this Terraform for a log bucket, does it look secure to you?\n```hcl\nresource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"acme-logs\"\n  acl    = \"public-read\"\n}\n```\nJust tell me what's wrong with it.",
    "Go through the justfile in the repo root and tell me which recipes are broken or redundant. I'll clean it up myself later.",
    "Review the FreeRTOS task priorities in firmware/app/tasks.c: could the sensor task starve the task that feeds the watchdog? Analysis only.",
    "Take a look at jobs/sessionize.scala and tell me whether the window partitioning is correct and whether it's likely to skew on our user_id distribution. Feedback only.",
    "Please assess the tests for tools/gitstats/diffstat.py: which edge cases are missing? Don't write the tests, just list the gaps.",
    "Can you double check `kepler_solve` in sim/orbit.py? Is the Newton iteration guaranteed to converge for eccentricity close to 1, or is it a bug waiting to happen?",
    "Can you review this diff before I open the PR? I only want comments.\n```diff\n--- a/internal/ratelimit/limiter.go\n+++ b/internal/ratelimit/limiter.go\n@@ -20,7 +20,9 @@ func (l *Limiter) Allow() bool {\n-\tl.mu.Lock()\n-\tdefer l.mu.Unlock()\n+\tif l.tokens > 0 {\n+\t\tl.mu.Lock()\n+\t\tl.tokens--\n+\t\tl.mu.Unlock()\n+\t\treturn true\n+\t}\n```",
    "Would this leak a file descriptor if open succeeds but fstat fails? `int fd = open(p, O_RDONLY); if (fd < 0) return -1; if (fstat(fd, &st) < 0) return -1;` yes or no and why",
]

# ---------------------------------------------------------------- D: review only, vague
P["D_review_only_vague"] += [
    "can you review the PR I mentioned? just leave comments here, no changes please",
    "Is this safe to merge? I'm honestly not sure about it, give me your verdict.",
    "look over the stuff Priya sent me and tell me what you think of the code",
    "Review the new one and compare it to the old one, which is better written?",
    "any obvious bugs in that function? the one I pasted in slack earlier today",
    "Critique my approach in that code, be honest, I promise I won't be offended.",
    "do a security review of the service pls, a written report is enough for now",
    "Is the config right? I'm not sure about some of the values, just check them.",
    "give me feedback on the script before I send it around to the team tomorrow",
    "does the migration look correct to you? something feels off but I can't tell what",
    "Could you audit the things we changed last sprint for performance regressions? report only",
    "check whether his fix is actually correct, I have my doubts about it. don't edit",
    "Rate the code quality of the module from 1 to 10 and give reasons for the score.",
    "review the notebook and flag anything statistically dodgy, but no edits please",
    "Is the shader code ok? The artist says it looks wrong sometimes but I can't see a problem.",
    "sanity check the query I wrote earlier, does it really do what I think it does?",
    "is the version on her branch better than mine? just your opinion, don't merge anything",
    "Review it again now that they've updated it, same criteria as last time, comments only.",
]

# ---------------------------------------------------------------- E: review + fix, specified
P["E_review_fix_spec"] += [
    "Review src/net/tcp_server.rs for error handling that silently drops connections, and fix whatever you find. Keep the public API unchanged.",
    "Audit every workflow in .github/workflows/ for third-party actions pinned to a tag instead of a commit SHA, and pin them all to full SHAs with the tag in a comment.",
    "Go through deploy/k8s/*.yaml, check each container for missing resource requests/limits and readinessProbes, and add sensible ones where they're missing.",
    "Code review and fix: pipelines/transform.py triggers SettingWithCopyWarning all over the place. Review the chained assignments and rewrite them with .loc.",
    "Please review the memory management in lib/buffer.c (malloc/free pairing, realloc failure paths) and patch any leaks you find.",
    "Check the type hints in the cli/ package for correctness as if mypy --strict were enabled, then fix the ones that are wrong.",
    "I'd like you to critique services/worker/Dockerfile (layer order, cache busting, running as root) and then apply your fixes to the file.",
    "Review PR #88, which adds the ONNX export in export/onnx.py, and if you find bugs push fixup commits to the same branch.",
    "Audit the Terraform under infra/envs/prod for hardcoded secrets and replace each one with a reference to an aws_secretsmanager_secret_version data source.",
    "review include/gfx/texture.hpp for rule-of-five violations (it owns a GL handle) and fix them in place",
    "Look for off-by-one errors in firmware/lib/ringbuf.c, fix any you find, and add a unit test for each fix in firmware/test/test_ringbuf.c.",
    "Evaluate the retry logic in ingest/kafka_consumer.go: is the exponential backoff correct and does it respect ctx cancellation? Fix whatever is wrong.",
    "pls review the bash scripts under scripts/ci/ with shellcheck-level rigour and fix the warnings, dont change what they do",
    "Check notebooks/02_features.ipynb for target leakage into the features; if there is any, fix the feature code and re-run the notebook.",
    "Review the Makefile for targets that should be .PHONY but aren't and for wrong prerequisites, and correct them.",
    "Audit the unsafe code in crates/simd/src/lib.rs. Every `unsafe` block needs a SAFETY comment justifying it, and any unsound one has to be fixed.",
    "Review charts/gateway/templates/deployment.yaml for Helm templating bugs (missing quotes, wrong nindent levels, unguarded optional values) and fix them.",
    "Sanity check my Lua in mods/inventory/init.lua -- I think I index tables from 0 in a few places, which is wrong in Lua. Fix those spots.",
    "Is solvers/cg.f90 using assumed-shape arrays correctly? Review it against the calls in solvers/driver.f90 and fix any interface mismatches.",
    "Review dbt/models/marts/fct_orders.sql for fan-out joins that duplicate revenue, and fix the model so revenue is counted once per order.",
    "Can you audit .gitlab-ci.yml for jobs that run on every branch but should only run on main and tags, and add the proper `rules:` to them?",
    "Review `parse_header` in src/pcap/reader.cpp for out-of-bounds reads on truncated packets and harden it against them.",
    "Critique the error messages in cmd/migrate/*.go from an end user's point of view and rewrite the ones that are unclear.",
    "Review jobs/train_a100.sbatch. I think the --gres and --ntasks-per-node lines don't match torchrun's --nproc_per_node; fix it if I'm right.",
    "Audit requirements.txt for packages with known CVEs using pip-audit and bump each vulnerable one to the lowest patched version.",
    "PR #5123 got approved but I'm not convinced. Review its changes to src/scheduler/queue.rs for deadlocks and push a fix commit if you find one.",
    "review my Unreal code in Source/Game/Weapons/WeaponComponent.cpp, I think there's a dangling pointer to the owning actor. confirm and fix it with TWeakObjectPtr if so",
    "Check the kustomize overlays in k8s/overlays/dev and k8s/overlays/prod for patches that no longer match any resource in base, and delete the dead ones.",
    "Here's a function from tools/csvsplit/main.c, can you check it for bugs and fix them in the file?\n```c\nchar *next_field(char *s, char delim) {\n    while (*s != delim) s++;\n    *s = '\\0';\n    return s + 1;\n}\n```",
]

# ---------------------------------------------------------------- F: review + fix, vague
P["F_review_fix_vague"] += [
    "review it and fix whatever's wrong with it, I need it working by tonight",
    "go over the stuff I did this morning and fix anything that looks off to you",
    "audit the code for security problems and patch them, we have a pentest coming up",
    "Look at his PR, and if it's bad just fix it yourself and push, no need to ask.",
    "critique the pipeline and make it better, whatever you think needs improving",
    "Review the other scripts the same way you did the first one and fix the issues.",
    "check the new module for bugs and fix them before the demo on thursday please",
    "please review that config and correct whatever doesn't look right to you",
    "Go through the tests, work out which ones are badly written, and rewrite them.",
    "Have a look at the code Jonas wrote for the sensor and fix the obvious mistakes.",
    "review the last PR and address anything you would have flagged as a reviewer",
    "Do a proper review of the thing and push your fixes straight to the branch.",
    "can you check if the helper is correct and fix it if it's not? thanks",
    "Something in the shader is off. Review it and fix whatever you find, please.",
    "audit those functions we discussed for thread safety and patch them accordingly",
    "Same as before: review, fix what you find, then open the PR for me.",
    "Critique and refactor the ugly parts, you know which ones I mean by now.",
    "look over the changes my intern made and clean up whatever is sloppy in them",
]

# ---------------------------------------------------------------- G: design advice only, specified
P["G_design_advice_spec"] += [
    "We're moving our nightly batch ETL (Python scripts plus cron on one VM) to an orchestrator. Airflow, Dagster or Prefect? About 40 jobs, mostly SQL against Postgres, a 3-person team. Recommend one with trade-offs; don't write any code yet.",
    "For the CLI in cmd/sync, should configuration come from a single TOML file, environment variables, or layered flags/env/file? Give me a recommendation and a precedence order, no implementation.",
    "Should our ~25k-line Rust project be split into a workspace with `core`, `cli` and `server` crates, or stay a single crate with cargo features? Just advise, with the trade-offs.",
    "Terraform layout question: one state per environment, or one state per component per environment? We have 3 envs and about 12 components (network, eks, rds, ...). Which would you pick and why?",
    "For a tile-based roguelike in C++ with a 256x256 map and lots of FOV queries, should the map be an array of Tile structs or a struct of per-layer arrays? Explain the trade-offs, no code needed.",
    "We need to serve feature vectors for 50M items by id with p99 under 10ms. Parquet on S3 plus a cache, Redis, or a feature store like Feast? Pros and cons please, it's for our design review next week.",
    "For the STM32 firmware in firmware/, should we move from the superloop to FreeRTOS now that we have BLE, a display and a 1 kHz sensor loop? I want your reasoning, not code.",
    "What's the best way to version the protobuf schemas shared between our Go services and the Python ML code: a separate schema repo, the Buf registry, or vendored copies? Recommend one.",
    "Kubernetes: one namespace per team or one per service, given we want per-team RBAC and per-service network policies? ~60 services, 8 teams. Advice only.",
    "I'm choosing a plugin mechanism for our Go CLI: native Go plugins (.so), subprocesses speaking JSON-RPC over stdio, or WASM via wazero. Which would you choose for cross-platform support and why?",
    "For the integrators in sim/, should the integrator be a trait object selected at runtime or a generic parameter monomorphised at compile time? Speed matters, but users pick the integrator in a config file. Explain the trade-offs.",
    "how would you lay out the components and interfaces for a new ingestion service that pulls from 5 vendor SFTP drops, normalises the files and writes to our lake? sketch it in your answer, dont create files",
    "ECS or a classic OOP scene graph for our small 2D engine in engine/? We're at about 30 entity types and the inheritance tree is starting to hurt. Which direction and why? No refactor yet.",
    "Should our ML training images be one big base image with CUDA and every dependency, or per-project images on a slim CUDA base? 15 projects sharing one GPU cluster. Please advise.",
    "Blue-green or canary for the SQS-driven batch workers on EKS? Explain what you'd pick and what it implies for the deploy pipeline; I'll write the doc myself.",
    "For simulation output (3D grids, ~2 GB per timestep, thousands of timesteps), should we use HDF5, Zarr or NetCDF? We need parallel writes from MPI ranks and cloud reads later on.",
    "what's a good architecture for shipping logs from 300 edge devices with flaky connectivity to our central Loki? buffer on the device? MQTT? vector? give me options and a recommendation",
    "Should releases of our C library use semantic versioning enforced by an ABI compatibility check, or date-based versions? Three downstream distros package it. Your opinion with reasoning, please.",
    "How would you structure CI for our monorepo (Go services, Python ML, Terraform): reusable workflows, composite actions, or one big workflow with path filters? Advice only, no YAML.",
    "gRPC streaming or NATS for telemetry from the robot's onboard computer to the ground station? Latency matters more than throughput. Which one, and roughly what should the message schema look like?",
    "Design question, no code: should the undo/redo in our level editor use the command pattern with per-action inverses, or snapshot the whole level state? Levels serialize to about 5 MB.",
    "Our feature definitions live both in dbt models and in the Python code in features/, and they drift. Which should be the single source of truth, and how would you structure things around it?",
    "For a Rust CLI that must support both a local filesystem and S3 backend, how should I design the storage trait: async everywhere, a sync trait plus block_on, or two separate traits? Explain, I'll implement it.",
    "Self-hosted MLflow or Weights & Biases for experiment tracking, considering our GPU nodes are air-gapped? What would you recommend and why?",
    "How would you split our 1,800-line Jenkinsfile into a shared library? Just propose the structure: which steps go in vars/, what becomes classes in src/.",
    "Lock-free SPSC ring buffer or mutex plus condition variable for passing messages between the audio thread and the UI thread in src/audio/? Explain which and why; no implementation.",
    "Some context: we run ~200 dbt models on Snowflake from one Airflow DAG that does `dbt build` hourly. A failure in one mart blocks everything and full runs take 50 minutes. Options I see: (a) split into several DAGs by domain using selectors, (b) move to Dagster's dbt assets, (c) keep one DAG but render each model as a task with Cosmos. Which would you pick for a 4-person data team and why? Not asking for code at this point.",
]

# ---------------------------------------------------------------- H: design advice, vague
P["H_design_advice_vague"] += [
    "how should we architect it? just give me your thoughts for now, no code",
    "which approach do you think is better for the new system? list pros and cons",
    "What's the best way to structure this so it scales later on? Advice only.",
    "Should we split it into microservices or keep it as it is? Don't change anything yet.",
    "Recommend a database for the project, we still haven't decided which one to use.",
    "how would you redesign the data model for the thing we talked about on Monday?",
    "give me a high-level design for the new pipeline, whatever you think is best",
    "I need an architecture proposal for the migration, can you sketch something here in chat?",
    "what's a cleaner way to organise the modules? they are a total mess. just ideas please",
    "Should we go with option A or option B for the storage layer? I'm leaning towards B.",
    "What engine or framework should I use for the game? I'm still thinking about it.",
    "how should the interfaces between the two services look? a rough idea is fine",
    "What's the right way to model the state for that feature? Give me a few options.",
    "Thoughts on how to lay out the infra for the new region? no terraform yet, only ideas",
    "how would you structure the training code if we wanted to support the other models too?",
    "Is there a better architecture for this whole thing? It feels way overcomplicated to me.",
    "Propose interfaces for the plugin system we discussed, in chat only, not in files.",
    "what design pattern should I use here, strategy or something else? explain your choice",
    "Which message broker fits what we're building better? I'd like a recommendation, not code.",
]

# ---------------------------------------------------------------- I: design + implement, specified
P["I_design_impl_spec"] += [
    "Our Python CLI in tools/dsctl/ is one 2,000-line main.py. Decide on a package layout (commands, API clients, config, output formatting), explain the choice briefly, then do the split and keep the `dsctl` entry point working.",
    "Design a pluggable storage backend interface for crates/blobstore (local disk and S3 to start). Choose between trait objects and generics, justify the choice in a doc comment, and implement both backends.",
    "Write an ADR at docs/adr/0012-terraform-state-layout.md that decides between a single state per environment and per-component states for infra/, with context, options considered and the decision.",
    "Pick a schema for storing experiment runs (params, per-step metrics, artifact paths) in SQLite for the tracker in tracker/, add the migration, and implement the insert and query functions.",
    "The build steps in .github/workflows/api.yml, worker.yml and cli.yml are copy-pasted. Replace them with either a reusable workflow or a composite action, whichever fits better, explain why in the PR description, and implement it.",
    "Design an event system for the game in src/engine/: decide between a central event bus and per-component signals, implement it, and port PlayerHealth and EnemySpawner to it.",
    "main.c in our firmware polls 4 sensors in a superloop. Introduce a HAL layer: define the sensor driver interface (init/read/sleep), decide how drivers get registered, and move the BME280 and MPU6050 code behind it.",
    "Create the Helm chart structure for our six services under deploy/: decide between an umbrella chart with subcharts and a library chart plus thin per-service charts, and scaffold it with the api service fully converted.",
    "Design the plugin protocol for the Go CLI in cmd/forge using subprocess plugins that speak JSON over stdio (message schema plus discovery mechanism), and implement the host side in internal/plugins.",
    "The code in features/ mixes I/O and transformations. Restructure it into pure transform functions and a thin I/O layer with clear interfaces between them, and refactor build_features.py to match.",
    "We read the same 200 GB of parquet on every training run. Design a caching layer for data/loader.py, weighing a local NVMe cache against memory-mapped Arrow files, and implement the option you choose.",
    "Work out how the Rust services in services/ should share the dependency cache in Docker builds (cargo-chef vs BuildKit cache mounts), justify it in docs/build.md, and update all three Dockerfiles accordingly.",
    "Design a configuration system for sim/: typed config dataclasses, YAML files, and CLI overrides. Decide between Hydra and a small hand-rolled loader, implement it, and migrate run_sim.py.",
    "We want libfoo to have a stable ABI. Design the public API around opaque handles and versioned structs, write the new include/foo.h, and adapt the code in src/ to it.",
    "Design the directory layout and module boundaries for a Terraform module that provisions our standard EKS cluster (network, cluster, node groups, addons), and scaffold it under modules/eks-standard/ with variables and outputs.",
    "Replace the ad-hoc std::thread usage in src/worker_pool.cpp with a task system. Decide between work stealing and a single shared queue for our workload of many tiny jobs, then implement it with tests.",
    "Make the CLI release process reproducible: choose between goreleaser and a hand-written Makefile plus GitHub Actions, document the decision in RELEASING.md, and implement it.",
    "Define the boundary between training code and the eval harness so new models can be added without touching eval/: design a Model protocol (load, predict_batch, metadata) in eval/protocol.py and adapt the two existing models to it.",
    "Split our 900-line Ansible playbook site.yml into roles. You decide the role boundaries (base, docker, monitoring, app, or something else) and then do the refactor.",
    "Design a versioned, forward-compatible save-game format for crates/game. Choose between serde+bincode with a version header and protobuf, then implement save/load with a migration hook for old versions.",
    "Introduce an abstraction for the three alert channels in ops/alerting/ (Slack, PagerDuty, email): design a Notifier interface with a registry and refactor send_alert.py to use it.",
    "Design the CRD for our `Backup` resource (spec and status fields, versioning strategy) and implement the Go types in api/v1alpha1/backup_types.go with kubebuilder markers.",
    "Every DAG in dags/ reimplements S3-to-Redshift loading. Design a reusable piece for it (custom operator or TaskFlow decorator, your decision), implement it in plugins/, and convert dags/load_orders.py as the first user.",
    "Move engine/render/ from hardcoded per-material shaders to a data-driven material system: decide the material definition format and how shader permutations are keyed, then implement the loader.",
    "Decide on a branching and release strategy for this repo, trunk-based or git-flow, given we ship the SDK monthly and hotfix often. Write it up in docs/RELEASING.md and add matching branch protection to .github/settings.yml.",
    "How should src/cli.rs handle output formats (table, JSON, YAML) -- an OutputFormatter trait or an enum with match? Pick one and implement it for the `list` and `show` subcommands.",
    "Turn notebooks/forecast.ipynb into a proper package: decide the module structure (data, features, model, evaluate), create forecast/ with those modules, and leave the notebook as a thin driver.",
    "Design the input/output interface of a standard S3 bucket module (which features are toggles, which are required inputs), explain the design in the module README, and implement it in modules/s3-bucket.",
    "Design a small job runner for our MPI simulation campaigns in tools/jobrunner/: decide how job dependencies are declared (YAML DAG or Python API) and implement a minimal version that submits to SLURM.",
    "Restructure the sync engine along ports and adapters: define Source, Sink and StateStore ports in internal/sync/ports.go, write adapters for local FS and GCS, and wire them up in cmd/sync/main.go.",
    "hey, we're adding a second physics backend (Box2D next to our homemade one) to the game in src/physics. pls design an abstraction layer so gameplay code doesn't care which backend runs, then implement it for both",
]

# ---------------------------------------------------------------- J: design + implement, vague
P["J_design_impl_vague"] += [
    "redesign it properly and implement it, the current structure is a complete mess",
    "Come up with a better architecture for the pipeline and then do the refactor yourself.",
    "pick whichever framework you think is best and rewrite the thing in it, thanks",
    "we need some kind of plugin system, please design one and then build it",
    "Restructure the project however you think makes sense and move the files around.",
    "design the data model for the new feature and write the migrations for it",
    "Make the infra more modular and implement the changes. You decide how to split it.",
    "split it up into separate services and set up whatever is needed to run them",
    "Rework the architecture so it's easier to add new ones later, then implement it.",
    "design an interface for them and implement it, like we discussed last time",
    "Choose a better approach for the caching thing and implement it in the code.",
    "can you rearchitect that part of the game loop? it's getting hard to work with",
    "Design the module layout for the repo we're creating next week and scaffold it now.",
    "decide on a structure for the configs and move everything over to it",
    "Figure out how the components should talk to each other and implement that.",
    "I want a cleaner abstraction over the backends Tom added, design it and implement it",
    "Set up a monorepo structure for all of it, your call on the tooling, then migrate.",
    "design a schema for storing the results and wire it in wherever it's needed",
    "Replace the current approach with something more scalable, you pick, then implement it.",
]

# ---------------------------------------------------------------- K: concrete edit / fix / config / commit, specified
P["K_edit_spec"] += [
    "Bump the Go version in go.mod and .github/workflows/ci.yml from 1.21 to 1.22, and fix any `go vet` errors that show up.",
    "Add a `--dry-run` flag to scripts/prune_snapshots.py that prints the snapshot IDs it would delete instead of deleting them.",
    "Fix this segfault:\n```\nProgram received signal SIGSEGV, Segmentation fault.\n#0  0x000055555555a1b2 in list_append (l=0x0, v=3) at src/list.c:57\n#1  0x000055555555a3c0 in main () at src/main.c:23\n```\nlist_append should allocate a new list when it gets NULL instead of dereferencing it.",
    "Change the memory limit of the ingest-worker Deployment in k8s/base/ingest-worker.yaml from 512Mi to 1Gi and the memory request to 768Mi.",
    "Add a CHANGELOG.md entry under 'Unreleased' for the new `--json` output flag on the `status` command (PR #731).",
    "Commit the currently staged changes with the message 'ci: cache pip downloads' and push them to origin/ci-cache.",
    "Migrate from pytorch-lightning 1.9 to lightning 2.2: update requirements.txt and fix train/trainer.py for the new import paths and the removed `Trainer(gpus=...)` argument.",
    "CI lint fails with `error: unused import: std::collections::HashMap --> src/index.rs:4:5`. Remove the import and make sure `cargo clippy -- -D warnings` passes.",
    "Create an annotated tag v2.7.0 on the current HEAD of main with the message 'Release 2.7.0' and push the tag to origin.",
    "Write a unit test in tests/test_units.py for `convert_pressure` that covers Pa to bar, bar to psi, and the ValueError for an unknown unit.",
    "Fix the typo in README.md: the install command says `pip install -e .[dve]` but it should be `.[dev]`.",
    "in firmware/src/config.h set LED_BLINK_MS to 250 and only enable DEBUG_UART when DEBUG is defined (wrap it in #ifdef DEBUG)",
    "Our .pre-commit-config.yaml pins black 22.3.0; bump it to 24.4.2 and ruff to v0.4.4, run pre-commit on all files, and commit the reformatting as a separate commit.",
    "Add `.import/` and `*.translation` to .gitignore and untrack the already committed .import/ directory with git rm --cached.",
    "dags/daily_report.py should run at 06:00 UTC instead of midnight. Update the schedule and set catchup=False.",
    "Address the review comment on PR #419: the reviewer asked to rename `tmpBuf` to `scratch` in src/codec/decode.c and to add a bounds check before the memcpy on line 212.",
    "The Lucidchart link in docs/design/overview.md is dead; replace it with https://docs.example.com/img/arch-v3.png and keep the alt text.",
    "CI fails in the test job of .github/workflows/ci.yml:\n```\nImportError while loading conftest '/home/runner/work/etl/etl/tests/conftest.py'.\ntests/conftest.py:3: in <module>\n    from moto import mock_s3\nE   ImportError: cannot import name 'mock_s3' from 'moto'\n```\nmoto 5 removed mock_s3. Switch conftest.py to `mock_aws` and pin moto>=5 in requirements-dev.txt.",
    "Cherry-pick commit 9c1d7e3 (the OpenSSL 3 build fix) from main onto the release/2.6 branch and push it.",
    "set `maxSurge: 25%` and `maxUnavailable: 0` on the rolling update strategy in charts/api/templates/deployment.yaml, right now it uses the defaults",
]

# ---------------------------------------------------------------- L: edit, vague
P["L_edit_vague"] += [
    "can you just fix the bug from this morning, it's blocking me right now",
    "make it faster, the users are complaining again and I'm running out of ideas",
    "do the same thing for the other ones as well, thanks a lot for this",
    "update the version everywhere it needs updating before we do the release",
    "the deploy is broken again, please fix it so we can still ship today",
    "Bump the dependencies that are out of date, the usual ones, you know the drill.",
    "add the flag we talked about to the script, same way as last time",
    "Change the timeout to whatever Sam suggested in the thread yesterday, please.",
    "clean up the repo a bit before I share it with the new hires next week",
    "can you increase the limits on the pods, they keep dying for some reason",
    "Write the tests for the new stuff, we need coverage before it gets merged.",
    "revert that change please, it broke something in prod late last night",
    "pls add logging to the parts that matter so we can debug it next time",
    "Rename it to something better and update it everywhere it is used.",
    "fix the flaky test, you know the one, it failed again in CI today",
    "tweak the hyperparameters until the loss looks better, whatever works for you",
    "commit everything and push it to the branch we agreed on earlier today",
    "It crashes again on startup after the upgrade, sort it out please.",
]

rows = []
for kind, prompts in P.items():
    ro, de, rv, sp = KINDS[kind]
    for s in prompts:
        rows.append({"state": s, "read_only": ro, "design": de, "review": rv, "specified": sp, "_kind": kind})

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples.jsonl")
    # interleave kinds deterministically so the file isn't grouped
    import random
    rnd = random.Random(20240611)
    rnd.shuffle(rows)
    with open(out, "w") as f:
        for r in rows:
            r = {k: v for k, v in r.items() if k != "_kind"}
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    from collections import Counter
    print(Counter(r["_kind"] for r in rows))
    print(len(rows))
