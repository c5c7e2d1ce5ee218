#!/usr/bin/env bash
# The Slurm deployment (deploy/slurm/submit.sh + stage.sbatch) on a real
# Slurm: Debian's slurm-wlm (slurmctld and slurmd for one node, munge for
# authentication) inside a loopback-only network namespace. It submits the
# whole evaluation of a small synthetic data set (3 embed shards, 3 score
# shards, local-directory store), kills one score array task with SIGKILL in
# the middle of its work (its partial not committed), requeues it with
# `scontrol requeue`, waits for the report job and compares the report with a
# local unsharded `retrieval run` of the same run file (as deploy/jobarray_test.go
# does). Runs as root (it installs slurm-wlm and munge if missing); every wait
# is bounded. Exits non-zero with the daemons' and the jobs' logs on failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" != 0 ]; then echo "slurm.sh: must run as root (daemons, apt-get, unshare)" >&2; exit 1; fi

# ---- outside the namespace: packages, then re-exec in a fresh netns --------
if [ -z "${VERTEBRAE_SLURM_NETNS:-}" ]; then
  pkgs=""
  command -v slurmctld >/dev/null || pkgs="$pkgs slurm-wlm"
  command -v munged >/dev/null || pkgs="$pkgs munge"
  command -v ip >/dev/null || pkgs="$pkgs iproute2"
  command -v jq >/dev/null || pkgs="$pkgs jq"
  command -v python3 >/dev/null || pkgs="$pkgs python3"
  if [ -n "$pkgs" ]; then
    echo "slurm.sh: installing$pkgs"
    timeout 300 bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null"
  fi
  unshare --net -- true || { echo "slurm.sh: unshare --net failed (a new network namespace needs CAP_SYS_ADMIN)" >&2; exit 1; }
  # Built out here: the namespace has no route to a module proxy.
  VERTEBRAE_SLURM_BINDIR=$(mktemp -d /tmp/vertebrae-slurm-bin.XXXXXX)
  export VERTEBRAE_SLURM_BINDIR
  timeout 300 go build -o "$VERTEBRAE_SLURM_BINDIR/vertebrae" ./cmd/vertebrae || { rm -rf "$VERTEBRAE_SLURM_BINDIR"; exit 1; }
  # Only lo in the namespace: the daemons' ports (6817/6818) cannot clash
  # with anything else on the machine and nothing leaves it.
  VERTEBRAE_SLURM_NETNS=1 exec unshare --net -- bash "$0" "$@"
fi

# ---- inside the namespace --------------------------------------------------
t0=$(date +%s)
say() { printf '[slurm.sh %4ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
ip link set lo up
# Slurm resolves every address, even 127.0.0.1 and the wildcard it listens
# on, with getaddrinfo(AF_INET, AI_ADDRCONFIG), which fails ("Name or service
# not known") unless an IPv4 address other than 127.0.0.1 is configured:
# glibc does not count 127.0.0.1 itself. A second loopback address counts.
ip addr add 127.0.0.2/32 dev lo
tmp=$(mktemp -d /tmp/vertebrae-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
ok=0
dump() {
  for f in "$tmp"/munged.log "$tmp"/slurmctld.log "$tmp"/slurmd.log; do
    [ -f "$f" ] && { echo "===== $f (tail)"; tail -n 80 "$f"; }
  done
  if [ -d "$tmp/work/logs" ]; then
    for f in "$tmp"/work/logs/*; do [ -f "$f" ] && { echo "===== job log $f"; tail -n 30 "$f"; }; done
  fi
  if command -v scontrol >/dev/null && [ -n "${SLURM_CONF:-}" ]; then
    echo "===== scontrol show job"; timeout 10 scontrol -o show job 2>&1 | cut -c1-400 || true
  fi
}
cleanup() {
  rc=$?
  if [ "$ok" != 1 ]; then echo "slurm.sh: FAILED (exit $rc)" >&2; dump >&2 || true; fi
  # Jobs first (their processes are children of slurmstepd, not of this shell).
  [ -n "${SLURM_CONF:-}" ] && timeout 10 scancel --quiet --full --signal=KILL --user=root 2>/dev/null || true
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
  for p in "${pids[@]}"; do timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -9 "$p" 2>/dev/null || true; done
  # slurmstepd processes left over by a killed slurmd.
  for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
    if [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$(readlink /proc/self/ns/net)" ]; then kill -9 "$p" 2>/dev/null || true; fi
  done
  rm -rf "$tmp" "$VERTEBRAE_SLURM_BINDIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

host=$(hostname -s)
say "network namespace with lo up; host $host; temp dir $tmp"

# ---- vertebrae and the data set -------------------------------------------
mkdir -p "$tmp/work/dataset"
export PATH="$VERTEBRAE_SLURM_BINDIR:$PATH"
# A synthetic problem like deploy/jobarray_test.go's: float32 values on a coarse
# grid (scores tie), three graded positives per query, each the query with
# D, 1.5·D or 2·D of its values redrawn. Big enough that a score task still
# has work to do when it is caught (its gallery shard is ~15 MB).
SIM_Q=2000 SIM_G=60000 SIM_D=192 timeout 120 python3 - "$tmp/work/dataset" <<'PY'
import array, os, random, sys
d = sys.argv[1]
Q, G, D = int(os.environ["SIM_Q"]), int(os.environ["SIM_G"]), int(os.environ["SIM_D"])
rng = random.Random(12)
grid = [(i - 4) / 4 for i in range(9)]
q = array.array("f", rng.choices(grid, k=Q * D))
g = array.array("f", rng.choices(grid, k=G * D))
qrels = ["query_id\tgallery_id\tgrade"]
for i in range(Q):
    for k in range(3):
        p = (i * 7 + k * 6151) % G  # distinct for every (i, k)
        g[p * D:(p + 1) * D] = q[i * D:(i + 1) * D]
        for _ in range(D * (2 + k) // 2):
            g[p * D + rng.randrange(D)] = rng.choice(grid)
        qrels.append(f"q{i}\tg{p}\t{3 - k}")
def write(name, prefix, rows, vals):
    for r in range(rows):
        vals[r * D] = 1.0  # no zero rows under cosine
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, D)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    if sys.byteorder != "little":
        vals.byteswap()
    with open(os.path.join(d, name + ".npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(vals.tobytes())
    with open(os.path.join(d, name + "ids.txt"), "w") as f:
        f.write("".join(f"{prefix}{r}\n" for r in range(rows)))
write("q", "q", Q, q)
write("g", "g", G, g)
with open(os.path.join(d, "qrels.tsv"), "w") as f:
    f.write("\n".join(qrels) + "\n")
PY
# The run file of deploy/k8s/00-config.yaml with the dataset below $tmp/work.
cat >"$tmp/work/run.yaml" <<EOF
version: 1
dataset:
  id: example
  revision: "1"
  queries: {path: $tmp/work/dataset/q.npy, ids: $tmp/work/dataset/qids.txt}
  gallery: {path: $tmp/work/dataset/g.npy, ids: $tmp/work/dataset/gids.txt}
  qrels: {path: $tmp/work/dataset/qrels.tsv}
retrieval: {similarity: cosine, ks: [1, 10, 100], primary_metric: ndcg@10}
extractors:
  - {name: tables, type: precomputed}
EOF
say "data set written"

# ---- munge ---------------------------------------------------------------
mkdir -p "$tmp/munge"
chmod 755 "$tmp/munge" # munged: "execute permissions for all required" on the socket's directory
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munge_socket="$tmp/munge/munge.socket"
munged --foreground --force --socket="$munge_socket" --key-file="$tmp/munge/munge.key" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" \
  --log-file="$tmp/munged.log" >>"$tmp/munged.log" 2>&1 &
pids+=($!)
timeout 30 bash -c "until [ -S '$munge_socket' ]; do sleep 0.2; done" || { echo "munged did not start" >&2; exit 1; }
timeout 10 munge --socket="$munge_socket" -n | timeout 10 unmunge --socket="$munge_socket" >/dev/null
say "munged up"

# ---- slurm.conf: one node, this machine's CPUs and memory (slurmd -C) -------
node=$(slurmd -C | head -n 1)
case "$node" in NodeName=*) ;; *) echo "slurmd -C printed: $node" >&2; exit 1 ;; esac
mkdir -p "$tmp/ctld" "$tmp/slurmd"
export SLURM_CONF="$tmp/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=vertebrae-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$tmp/ctld
SlurmdSpoolDir=$tmp/slurmd
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
JobRequeue=1
MinJobAge=3600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >>"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
timeout 60 bash -c 'until scontrol ping 2>/dev/null | grep -q "is UP"; do sleep 0.5; done' || { echo "slurmctld did not come up" >&2; cat "$tmp/slurmctld.out" >&2; exit 1; }
slurmd -D -f "$SLURM_CONF" >>"$tmp/slurmd.out" 2>&1 &
pids+=($!)
timeout 60 bash -c "until [ \"\$(sinfo -h -n '$host' -o %T 2>/dev/null)\" = idle ]; do sleep 0.5; done" || {
  echo "node $host not idle within 60 s:" >&2; sinfo -N -l >&2 || true; cat "$tmp/slurmd.out" >&2; exit 1; }
say "slurmctld and slurmd up: $(sinfo -h -N -o '%N %T cpus=%c mem=%m')"

# ---- submit --------------------------------------------------------------
export VERTEBRAE_RUN_FILE="$tmp/work/run.yaml" VERTEBRAE_WORK="$tmp/work/eval" VERTEBRAE_STORE="$tmp/store"
export VERTEBRAE_EXTRACTOR=tables VERTEBRAE_EMBED_SHARDS=3 VERTEBRAE_SCORE_SHARDS=3
# The stage script asks for 2 CPUs and 8 GiB per task; the small problem
# needs far less, and one CPU per task lets two tasks run side by side here.
out=$(timeout 60 bash deploy/slurm/submit.sh --cpus-per-task=1 --mem=1G)
say "$out"
re='^submitted: plan ([0-9]+), embed ([0-9]+) ([0-9]+), merge ([0-9]+), positives ([0-9]+), score ([0-9]+), finalize ([0-9]+), report ([0-9]+)$'
[[ "$out" =~ $re ]] || { echo "unexpected submit.sh output: $out" >&2; exit 1; }
score=${BASH_REMATCH[6]} finalize=${BASH_REMATCH[7]} report=${BASH_REMATCH[8]}
victim=1

show() { # show JOB NAME...: those NAME=value fields of `scontrol show job JOB` (every record)
  local job=$1; shift
  timeout 10 scontrol -o show job "$job" 2>/dev/null | tr ' ' '\n' | grep -E "^($(IFS='|'; echo "$*"))=" | tr '\n' ' '
}
field() { # field JOB NAME: NAME=value of `scontrol show job JOB` (first record)
  timeout 10 scontrol -o show job "$1" 2>/dev/null | head -n 1 | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
# Fail at once when a job ended badly or can never start.
never=0
check_jobs() {
  local jobs bad
  jobs=$(timeout 10 scontrol -o show job 2>/dev/null || true)
  bad=$(grep -E 'JobState=(FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)' <<<"$jobs" | grep -v "JobId=$1 " | cut -c1-300 || true)
  [ -z "$bad" ] || { echo "a job failed:" >&2; echo "$bad" >&2; exit 1; }
  if grep -q 'Reason=DependencyNeverSatisfied' <<<"$jobs"; then never=$((never + 1)); else never=0; fi
  [ "$never" -lt 10 ] || { echo "a job can never start:" >&2; grep DependencyNeverSatisfied <<<"$jobs" | cut -c1-300 >&2; exit 1; }
}

# ---- kill score task $victim mid-shard, then requeue it --------------------
# The task is found through /proc (faster than asking slurmctld): the batch
# script execs vertebrae, whose environment names the array job and task.
task="${score}_$victim"
deadline=$(($(date +%s) + 240))
tid="" pid="" n=0
while :; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "score task $task not caught running within 240 s" >&2; exit 1; }
  # Shell builtins only (forks are slow): scan /proc for the task's process.
  for d in /proc/[0-9]*; do
    read -r comm 2>/dev/null <"$d/comm" || continue
    [ "$comm" = vertebrae ] || continue
    mapfile -d "" env 2>/dev/null <"$d/environ" || continue
    [[ " ${env[*]} " == *" SLURM_ARRAY_JOB_ID=$score "* && " ${env[*]} " == *" SLURM_ARRAY_TASK_ID=$victim "* ]] || continue
    for kv in "${env[@]}"; do [[ "$kv" == SLURM_JOB_ID=* ]] && tid=${kv#SLURM_JOB_ID=}; done
    # Wait until it has moved 4 MiB through read/write (it is loading its
    # ~20 MB of inputs: at work, not done), then stop it.
    for ((w = 0; w < 20000; w++)); do
      io=0
      while read -r k v; do if [[ "$k" == [rw]char: ]]; then io=$((io + v)); fi; done 2>/dev/null <"$d/io" || break
      if [ "$io" -ge $((4 << 20)) ]; then kill -STOP "${d#/proc/}" 2>/dev/null && pid=${d#/proc/}; break; fi
    done
    break
  done
  [ -z "$pid" ] || break
  if [ $((n++ % 50)) = 0 ]; then
    check_jobs none
    case "$(field "$task" JobState)" in
      COMPLETED|FAILED|CANCELLED) echo "score task $task ended before it could be killed mid-shard; the data set is too small for this machine" >&2; exit 1 ;;
    esac
  fi
  sleep 0.02
done
partial="partials/$(printf '%05d-of-%05d' "$victim" "$VERTEBRAE_SCORE_SHARDS")/manifest.json"
if find "$VERTEBRAE_STORE" -path "*/$partial" | grep -q .; then
  echo "score task $task committed its partial before the kill; the data set is too small for this machine" >&2; exit 1
fi
kill -KILL "$pid"
say "score task $task (job $tid, pid $pid, $io bytes read/written) killed with SIGKILL mid-shard"
timeout 60 bash -c "until case \$(scontrol -o show job $tid | grep -o 'JobState=[A-Z_]*') in JobState=RUNNING|JobState=COMPLETING) false ;; *) true ;; esac; do sleep 0.2; done" ||
  { echo "job $tid still running 60 s after SIGKILL" >&2; exit 1; }
say "after the kill: $(show "$tid" JobId ArrayJobId ArrayTaskId JobState Reason ExitCode Restarts)"
if find "$VERTEBRAE_STORE" -path "*/$partial" | grep -q .; then echo "the killed task committed its partial" >&2; exit 1; fi
[ "$(field "$tid" JobState)" = FAILED ] || { echo "want the killed task FAILED, got $(field "$tid" JobState)" >&2; exit 1; }
timeout 10 scontrol requeue "$task"
say "requeued: $(show "$task" JobId ArrayJobId ArrayTaskId JobState Reason Restarts)"
# A failed afterok dependency stays failed even when the failed task is
# requeued and succeeds (sbatch(1)), and an afterok on the whole array can
# never be satisfied again (the array keeps the failed task's exit code):
# finalize is left DependencyNeverSatisfied. Its dependency is set again,
# on the array's tasks one by one; with the task requeued it stays pending
# until every score task has succeeded.
say "finalize before: $(show "$finalize" JobState Reason Dependency)"
deps="afterok$(for ((i = 0; i < VERTEBRAE_SCORE_SHARDS; i++)); do printf ':%s_%d' "$score" "$i"; done)"
timeout 10 scontrol update JobId="$finalize" Dependency="$deps"
say "finalize after scontrol update Dependency=$deps: $(show "$finalize" JobState Reason Dependency)"
# A requeued batch job is held back (BeginTime) for a while; let it start
# soon, but not within the second of the kill: slurmd refuses a launch whose
# credential is not newer (whole seconds) than the killed instance's
# revocation ("Job credential revoked"), which fails the task.
if [ "$(field "$task" JobState)" = PENDING ]; then timeout 10 scontrol update JobId="$task" StartTime=now+3; fi

# ---- wait for the report job ------------------------------------------------
deadline=$(($(date +%s) + 300))
while :; do
  st=$(field "$report" JobState)
  [ "$st" = COMPLETED ] && break
  [ "$(date +%s)" -lt "$deadline" ] || { echo "report job $report not done within 300 s (state $st)" >&2; exit 1; }
  # The killed task's FAILED record is gone once it is requeued; any other
  # failure is fatal.
  check_jobs "$tid"
  sleep 1
done
say "report job $report COMPLETED"
timeout 10 scontrol -o show job "$score" | while read -r line; do
  echo "  score array: $(tr ' ' '\n' <<<"$line" | grep -E '^(JobId|ArrayTaskId|JobState|ExitCode|Restarts|StartTime|EndTime)=' | tr '\n' ' ')"
done
restarts=$(field "$task" Restarts)
[ "$restarts" = 1 ] && [ "$(field "$task" JobState)" = COMPLETED ] ||
  { echo "score task $task: want COMPLETED after one restart, got $(field "$task" JobState), Restarts=$restarts" >&2; exit 1; }
# finalize started only after the retry had ended (times in whole seconds).
retry_end=$(date -d "$(field "$task" EndTime)" +%s) fin_start=$(date -d "$(field "$finalize" StartTime)" +%s)
[ "$fin_start" -ge "$retry_end" ] || { echo "finalize started at $(field "$finalize" StartTime), before the retry of $task ended ($(field "$task" EndTime))" >&2; exit 1; }
echo "  finalize: $(show "$finalize" JobId JobState StartTime)"
grep -E "Requeuing JobId=${score}_$victim\b" "$tmp/slurmctld.log" | sed 's/^/  slurmctld: /' || true
grep -E "batch job $tid for|\[$tid\.batch\]" "$tmp/slurmd.log" | sed 's/^/  slurmd: /' || true
say "score task $task ran twice (Restarts=$restarts): killed with SIGKILL, requeued, completed; finalize started after the retry"

# ---- compare with a local unsharded run ---------------------------------------
timeout 120 vertebrae retrieval run --spec "$VERTEBRAE_RUN_FILE" --json "$tmp/local.json" --quiet
# As deploy/jobarray_test.go's compareReports: equal apart from runtime.*,
# cache_status and the artifact metadata (SPEC §10.8); jq compares numbers as
# float64, exactly.
jq -n --slurpfile got "$VERTEBRAE_WORK/report/report.json" --slurpfile want "$tmp/local.json" '
  def clean: .extractor_results |= map(del(.runtime, .cache_status));
  ($got[0] | clean) as $g | ($want[0] | clean) as $w
  | [ (["schema_version", "extractor_results", "ranking"][] | select($g[.] != $w[.]) | "\(.) differs"),
      (["modality", "n_queries", "n_gallery", "query_modality", "gallery_modality", "identity"][]
        | select($g.dataset_summary[.] != $w.dataset_summary[.]) | "dataset_summary.\(.) differs"),
      (if $g.metadata.artifact_backed != true then "metadata.artifact_backed is not true" else empty end),
      (["protocol_fingerprint", "retrieval_config"][] | select($g.metadata[.] != $w.metadata[.]) | "metadata.\(.) differs") ]
  | if length == 0 then empty else error(join("; ")) end' ||
  { echo "the Slurm report differs from the local run:" >&2; diff <(jq -S 'del(.extractor_results[].runtime)' "$VERTEBRAE_WORK/report/report.json") <(jq -S 'del(.extractor_results[].runtime)' "$tmp/local.json") | head -n 60 >&2; exit 1; }
echo "  job logs: $(cd "$VERTEBRAE_WORK/logs" && echo *)"
say "report equals the local run: $(jq -c '.extractor_results[0].forward.metrics' "$VERTEBRAE_WORK/report/report.json" | cut -c1-300)"
ok=1
say "PASS in $(($(date +%s) - t0)) s"
