#!/usr/bin/env bash
# The GPU check of the GPU engine (device="cuda"), for one machine with a CUDA GPU and no network
# (an H200 with 16 host cores, CuPy, Numba, PyTorch, tokenizers and tiktoken installed).
#
#   1. the card, the driver and the Python packages;
#   2. "warm": one small gpu_bench run (gpt2, llama2; 0.3 MB a file) with the pieces cut on the
#      host, then one with them cut on the device, then one with k_medium on (GPU_TOK_CUDA_MEDIUM=256):
#      it compiles every kernel the later steps launch
#      into Numba's on-disk cache (GPU_TOK_CUDA_CACHE=1), so each later process loads them
#      (about 2 minutes on a fresh machine, once);
#   3. in the order of what a short lease must bring back first:
#      benchmarks/gpu_bench.py: device="cuda" == device="cpu" on the whole bench corpus (the first
#      8 MB of each bench file), end-to-end MB/s (ids back on the host, and left on the device),
#      and the split host / copies / kernels, then again with the pieces over 512, 256, 128 and
#      64 bytes encoded on the host (GPU_CHECK_HOST_PIECE, empty: none): one GPU thread runs a
#      long piece's heap BPE as a serial chain of loads, and the longest piece of a batch sets
#      k_long's time (longest pieces, scratch count: o200k_base multilingual 591 bytes, llama2
#      multilingual some 4,400 split at spaces; k_long 4.2-5.1 ms per 8 MB on 2026-12-05), while the host step encodes the few such pieces on
#      its threads (this 2-core host: 0.5-1.4 ms per 4 MB at 128 bytes, 2 threads);
#      "ab": gpu_bench with the distinct pieces of 65-256 and of 65-128 bytes rescanned by
#      k_medium (GPU_TOK_CUDA_MEDIUM) and with the pieces cut on the device (byte-level and
#      SentencePiece), and with the hybrid loop (GPU_TOK_CUDA_HYBRID=auto: the CPU engine encodes
#      a share of each call while the device runs the rest), each against the default (ab.log;
#      GPU_CHECK_AB lists the settings, five per run, e.g. "1 0 0 64 0 0 0 0 64 0" adds
#      FastLauncher off: 1.02-1.45x slower on 2026-12-06, and the overlapped host step: 0.36-0.64x);
#      tests/test_gpu_sim.py on the real GPU (GPU_TOK_REAL_CUDA=1: every golden record of every
#      family whose model is there, tiktoken encodings, edge cases, OOM halving, twins, both
#      device cuts);
#      "hostsplit": benchmarks/host_pieces.py, the host step alone at 1, 4 and all threads with its
#      parts (how it scales on this machine's cores), then what stays on the host of the device
#      cut (gpu_bench.log);
#      benchmarks/gpu_overheads.py: what one launch, wait, allocation and copy cost, launches per
#      run, MB/s as the input grows (gpu_bench.log);
#      "job": the corpus job (gpu-tok encode, gpt2, bin shards) over the bench files' documents
#      four times over (96 MB of JSON Lines, 16 MiB batches) on the GPU engine (hybrid loop off,
#      then auto) and on the CPU engine, each twice: its summary lines (MB/s of reading,
#      encoding and writing) in gpu_bench.log and summary.md;
#      ncu (Nsight Compute) on the first batch's kernels of gpt2 on english_prose (ncu.log);
#   4. benchmarks/bench.py: (step "scale" only) our CPU engine and gigatoken at 4 and 8 threads
#      on english_prose, ours on unseen text with its shared word table off and on;
#      our CPU engine, HF tokenizers, tiktoken and gigatoken (when installed or carried as a
#      wheel) on all host cores, same texts;
#   5. summary.md.
#
# Everything goes to $OUT (default build/gpu_check_out): at most 8 files. Each step has a time
# limit and its exit status is recorded; the script goes on after a failing step and exits 1 if
# any failed. About 7-8 minutes with a machine's start (the worst case is the sum of the limits,
# over 10 minutes: a device call's limit; GPU_CHECK_STEPS shortens a rerun, and a step cut off
# by the call's limit loses only what follows it).
#
# Data: GPU_TOK_MODELS / GPU_TOK_CORPORA if set; else build/gpu_stage/stage.tar.xz (made by
# benchmarks/gpu_stage.py, carried as build/gpu_stage) unpacked to /tmp; else ../shared.
# Wheels: gigatoken and what its array API imports, staged by gpu_stage.py in build/gpu_stage/whl
# (carried with build/gpu_stage); installed with --no-index, only where missing. Nothing is
# downloaded.
#
# GPU_CHECK_DRY=1: a dry run without a GPU (the tests under the simulator, gpu_bench on the CPU
# twins), to check the script itself. GPU_CHECK_STEPS=tests,gpu (say): a rerun that leaves a
# step out (default warm,gpu,ab,tests,hostsplit,overheads,job,cpu,ncu; "scale" adds step 4's runs at 4 and 8 threads
# and on unseen text). GPU_TOK_GIT: the commit to name in the results (the copy
# on a lent machine may carry a stale .git).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/build/gpu_check_out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
THREADS=${GPU_CHECK_THREADS:-$(nproc)}
MODELS=${GPU_CHECK_MODELS:-gpt2,llama3,o200k_base,llama2}  # llama2: the SentencePiece host step
MAX_MB=${GPU_CHECK_MAX_MB:-8}
STEPS=${GPU_CHECK_STEPS:-warm,gpu,ab,tests,hostsplit,overheads,job,cpu,ncu}  # which steps run (a rerun may leave some out)
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
unset NUMBA_ENABLE_CUDASIM
FAILED=0
: > "$OUT/steps.txt"

step() {  # step NAME LIMIT_S LOG CMD...
  local name=$1 limit=$2 log=$3
  shift 3
  local t0 rc
  t0=$(date +%s)
  echo "== $name (limit ${limit}s)" | tee -a "$log"
  timeout -k 15 "$limit" "$@" > >(tee -a "$log") 2>&1
  rc=$?
  local dt=$(( $(date +%s) - t0 ))
  [ "$rc" -eq 124 ] && echo "== $name: TIMED OUT after ${limit}s" | tee -a "$log"
  echo "== $name: exit $rc after ${dt}s"
  echo "$name: exit $rc after ${dt}s (limit ${limit}s)" >> "$OUT/steps.txt"
  [ "$rc" -eq 0 ] || FAILED=1
  return 0
}

# ---------------------------------------------------------------- data
if [ -z "${GPU_TOK_MODELS:-}" ] && [ -f build/gpu_stage/stage.tar.xz ]; then
  $PY - <<'EOF' && export GPU_TOK_MODELS=/tmp/gpu_tok_stage/models GPU_TOK_CORPORA=/tmp/gpu_tok_stage/corpora
import sys, tarfile
with tarfile.open("build/gpu_stage/stage.tar.xz") as t:
    if sys.version_info >= (3, 12):
        t.extractall("/tmp/gpu_tok_stage", filter="data")
    else:
        t.extractall("/tmp/gpu_tok_stage")
EOF
fi
export GPU_TOK_MODELS=${GPU_TOK_MODELS:-$ROOT/../shared/models}
export GPU_TOK_CORPORA=${GPU_TOK_CORPORA:-$ROOT/../shared/corpora}
# gigatoken and what its array API imports (build/gpu_stage/whl/needs.txt, lines "module
# package==version", written by benchmarks/gpu_stage.py), each only where this Python cannot
# import it, so nothing the machine has is replaced: from build/gpu_stage/whl, no index, no
# dependency resolution, into /tmp/gpu_tok_site (emptied first: it is on PYTHONPATH, before the
# site packages, so it must hold nothing but what this Python lacks)
rm -rf /tmp/gpu_tok_site
export PYTHONPATH="$PYTHONPATH:/tmp/gpu_tok_site"
if [ -f build/gpu_stage/whl/needs.txt ]; then
  while read -r mod pkg; do
    [ -n "$mod" ] || continue
    $PY -c "import $mod" > /dev/null 2>&1 && continue
    echo "wheels: installing $pkg ($mod is not importable here)" | tee -a "$OUT/cpu_bench.log"
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu_tok_site \
      --find-links build/gpu_stage/whl "$pkg" >> "$OUT/cpu_bench.log" 2>&1 \
      || echo "wheels: $pkg failed (cpu_bench.log)" | tee -a "$OUT/cpu_bench.log"
  done < build/gpu_stage/whl/needs.txt
fi

# ---------------------------------------------------------------- 1. card
{
  date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi failed"
  echo "host: $(uname -srm), $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2)"
  echo "models: $GPU_TOK_MODELS ($(ls "$GPU_TOK_MODELS" 2>/dev/null | tr '\n' ' '))"
  echo "corpora: $GPU_TOK_CORPORA ($(ls "$GPU_TOK_CORPORA/bench" 2>/dev/null | tr '\n' ' '))"
  $PY - <<'EOF'
import importlib, importlib.metadata, platform
print("python", platform.python_version())
for m in ("numpy", "numba", "numba_cuda", "cupy", "torch", "tokenizers", "tiktoken", "gigatoken", "awkward"):
    try:
        v = getattr(importlib.import_module(m), "__version__", None)
    except Exception as e:
        print(m, "not available:", type(e).__name__)
        continue
    try:
        v = v or importlib.metadata.version(m.replace("_", "-"))
    except Exception:
        v = "?"
    print(m, v)
try:
    from numba import cuda
    d = cuda.get_current_device()
    print("numba.cuda device:", d.name, "cc", d.compute_capability)
except Exception as e:
    print("numba.cuda: not usable:", type(e).__name__, e)
EOF
} > "$OUT/card.txt" 2>&1
cat "$OUT/card.txt"

# ---------------------------------------------------------------- 2./3. warm, gpu_bench, ab, the tests on the GPU, ...
if [ "${GPU_CHECK_DRY:-0}" = 1 ]; then REAL=0; DEVICE=twin; else REAL=1; DEVICE=cuda; fi
# on the GPU machine the device tests are spread over several processes (pytest-xdist, where
# importable): each compiles what the kernel cache does not hold; one process ran out of 150 s
XDIST=()
if [ "$REAL" = 1 ] && [ "${GPU_CHECK_TEST_WORKERS:-8}" -gt 1 ] && $PY -c "import xdist" > /dev/null 2>&1; then
  XDIST=(-n "${GPU_CHECK_TEST_WORKERS:-8}" --dist load)
fi
has_step() { case ",$STEPS," in *",$1,"*) return 0;; esac; return 1; }
# the dry run's simulator is one process and slow (a 2-core host needs several minutes)
if [ "$REAL" = 1 ]; then TEST_LIMIT=${GPU_CHECK_TEST_LIMIT:-200}; else TEST_LIMIT=${GPU_CHECK_TEST_LIMIT:-1200}; fi
# every step loads the kernels from Numba's on-disk cache (GPU_TOK_CUDA_CACHE=1), compiled once
# by the step "warm" (about 2 minutes on a fresh machine), instead of each process compiling
# them again (the 8 test workers did, 180 s of the test step's 200 on 2026-12-05; the device
# cuts' kernels were then compiled by no step before the tests); GPU_CHECK_CUDA_CACHE=0 leaves
# the cache off
export GPU_TOK_CUDA_CACHE=${GPU_CHECK_CUDA_CACHE:-1}

# compile every kernel the later steps launch, once, into Numba's on-disk cache: the pieces
# cut on the host (the default), then on the device (byte-level: gpt2; SentencePiece: llama2);
# a small gpu_bench run each (0.3 MB of each file, ids checked too)
if has_step warm; then
  for warm in "0 64" "1 64" "0 256"; do  # (device cut, medium): the last compiles k_medium
    set -- $warm
    step "warm: compile the kernels, device cut $1, medium $2" "${GPU_CHECK_WARM_LIMIT:-240}" "$OUT/gpu_bench.log" \
      env GPU_TOK_CUDA_DEVICE_CUT=$1 GPU_TOK_CUDA_MEDIUM=$2 $PY benchmarks/gpu_bench.py \
        --device $DEVICE --models gpt2,llama2 --files code,english_prose,multilingual --max-mb 0.3 --repeat 1 \
        --threads "$THREADS" --out "/tmp/gpu_tok_warm_$1_$2"
  done
fi

# equality and GPU timing, the engine's defaults
has_step gpu && step "gpu_bench" 200 "$OUT/gpu_bench.log" \
  $PY benchmarks/gpu_bench.py --device $DEVICE --models "$MODELS" --files code,english_prose,multilingual \
    --max-mb "$MAX_MB" --repeat 3 --threads "$THREADS" --out "$OUT" --budget-s 140 \
    --host-piece "${GPU_CHECK_HOST_PIECE-512,256,128,64}"

# A/B of the engine's switches on the same machine, same texts: FastLauncher
# (GPU_TOK_CUDA_FAST_LAUNCH), the overlapped host step (GPU_TOK_CUDA_OVERLAP), the pieces cut on
# the device (GPU_TOK_CUDA_DEVICE_CUT), the distinct pieces of 65 to N bytes rescanned by
# k_medium rather than k_long's heap (GPU_TOK_CUDA_MEDIUM=N; 64: none, the default), the hybrid
# loop (GPU_TOK_CUDA_HYBRID=auto: the CPU engine encodes a share of each call on the host's
# threads while the device runs the rest; 0: off, the default), each setting against the
# defaults ("1 0 0 64 0", run first and again last, so its spread shows); each a gpu_bench run
# (ids checked against device="cpu"), its table into ab.log
AB=${GPU_CHECK_AB:-"1 0 0 64 0 1 0 0 64 auto 1 0 0 256 0 1 0 0 128 0 1 0 1 64 0 1 0 0 64 0"}
if has_step ab; then
  set -- $AB
  while [ $# -ge 5 ]; do
    step "ab: fast launch $1, overlap $2, device cut $3, medium $4, hybrid $5" "${GPU_CHECK_AB_LIMIT:-60}" \
      "$OUT/ab.log" env GPU_TOK_CUDA_FAST_LAUNCH=$1 GPU_TOK_CUDA_OVERLAP=$2 GPU_TOK_CUDA_DEVICE_CUT=$3 \
        GPU_TOK_CUDA_MEDIUM=$4 GPU_TOK_CUDA_HYBRID=$5 \
        $PY benchmarks/gpu_bench.py --device $DEVICE --models "${GPU_CHECK_AB_MODELS:-gpt2,o200k_base,llama2}" \
        --files code,english_prose,multilingual --max-mb "$MAX_MB" --repeat 3 --threads "$THREADS" \
        --out "/tmp/gpu_tok_ab_$1$2$3_$4_$5"
    shift 5
  done
fi

has_step tests && step "tests on the GPU" "$TEST_LIMIT" "$OUT/pytest.log" \
  env GPU_TOK_REAL_CUDA=$REAL $PY -m pytest -q -p no:cacheprovider -rs "${XDIST[@]}" tests/test_gpu_sim.py

# the host step alone (no device work) at 1, 4 and all threads, with its parts (gpu_host.lap):
# on 2026-12-05 it took 3.5 ms per 8 MB of gpt2 english_prose on 16 cores, where this 2-core
# host's two threads and per-call cost predicted about 1 ms
has_step hostsplit && step "host step alone" "${GPU_CHECK_HOSTSPLIT_LIMIT:-60}" "$OUT/gpu_bench.log" \
  $PY benchmarks/host_pieces.py --models "${GPU_CHECK_HOSTSPLIT_MODELS:-gpt2,llama2}" \
    --files code,english_prose,multilingual --threads "1,4,$THREADS" --max-mb "$MAX_MB" --repeat 5
# ... and what stays on the host when the device cuts the pieces (GPU_TOK_CUDA_DEVICE_CUT=1)
has_step hostsplit && step "host part of the device cut" "${GPU_CHECK_HOSTSPLIT_LIMIT:-60}" "$OUT/gpu_bench.log" \
  $PY benchmarks/host_pieces.py --models "${GPU_CHECK_HOSTSPLIT_MODELS:-gpt2,llama2}" --device-cut \
    --files code,english_prose,multilingual --threads "1,4,$THREADS" --max-mb "$MAX_MB" --repeat 5

# fixed costs: one launch, wait, allocation, scalar read; launches per run; MB/s as input grows;
# the card's SM and memory clocks and load sampled every 100 ms meanwhile (they idle low, and a
# run of a few ms may end before they rise), summarized into the same log
CLOCKS=""
SIZES=2,8,24,240
[ "$REAL" = 1 ] || SIZES=2,8  # the twins run about 10 MB/s
if has_step overheads && [ "$REAL" = 1 ] && command -v nvidia-smi > /dev/null 2>&1; then
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,utilization.gpu --format=csv,noheader,nounits -lms 100 \
    > /tmp/gpu_tok_clocks.csv 2>/dev/null &
  CLOCKS=$!
fi
# then the phases of one 8 MB and one 240 MB run, each under cProfile too (the host thread's
# Python), and the 240 MB run with other batch sizes
PROFILE_MB=${GPU_CHECK_PROFILE_MB-8,240}
[ "$REAL" = 1 ] || PROFILE_MB=${GPU_CHECK_PROFILE_MB-2}
has_step overheads && step "overheads" "${GPU_CHECK_OVERHEADS_LIMIT:-150}" "$OUT/gpu_bench.log" \
  $PY benchmarks/gpu_overheads.py --device $DEVICE --model gpt2 --threads "$THREADS" --sizes-mb "$SIZES" \
    --profile-mb "$PROFILE_MB" --batch-mb "${GPU_CHECK_BATCH_MB-16,256}"
if [ -n "$CLOCKS" ]; then
  kill "$CLOCKS" 2>/dev/null
  $PY - <<'EOF' 2>&1 | tee -a "$OUT/gpu_bench.log"
rows = []
for line in open("/tmp/gpu_tok_clocks.csv"):
    try:
        rows.append([float(x) for x in line.split(",")])
    except ValueError:
        pass
if rows:
    def q(i, f):
        v = sorted(r[i] for r in rows)
        return v[min(len(v) - 1, int(f * len(v)))]
    print(f"clocks during the overheads step ({len(rows)} samples, 100 ms apart): SM MHz min {q(0, 0):.0f} "
          f"median {q(0, 0.5):.0f} max {q(0, 1):.0f}; memory MHz median {q(1, 0.5):.0f}; "
          f"load % median {q(2, 0.5):.0f} max {q(2, 1):.0f}")
else:
    print("clocks: no samples from nvidia-smi")
EOF
fi

# the corpus job as a user runs it (reading JSON Lines, encoding, writing bin shards), on the GPU
# engine with the hybrid loop off and on, and on the CPU engine; each twice (the first run of a
# process pays its first touches of memory); the job's own summary line is the result
if has_step job; then
  JOB_IN=()
  for k in 1 2 3 4; do
    for f in code english_prose multilingual; do JOB_IN+=("$GPU_TOK_CORPORA/bench/$f.jsonl"); done
  done
  JOBS="cuda 0 cuda auto cpu 0"
  [ "$REAL" = 1 ] || JOBS="cpu 0"
  set -- $JOBS
  while [ $# -ge 2 ]; do
    for run in 1 2; do
      step "job: device $1, hybrid $2, run $run" "${GPU_CHECK_JOB_LIMIT:-60}" "$OUT/gpu_bench.log" \
        env GPU_TOK_CUDA_HYBRID=$2 $PY -m gpu_tok encode --tokenizer gpt2 --device "$1" --num-threads "$THREADS" \
          --input "${JOB_IN[@]}" --output /tmp/gpu_tok_job --overwrite
    done
    shift 2
  done
fi

# ---------------------------------------------------------------- 4. CPU engines, same texts
ENGINES=ours,hf,tiktoken
if ! has_step cpu; then
  :
elif $PY -c "import gigatoken, awkward" > /dev/null 2>&1; then
  ENGINES=$ENGINES,gigatoken
else
  echo "gigatoken (with awkward): not importable, and no wheel staged in build/gpu_stage/whl: skipped" | tee -a "$OUT/cpu_bench.log"
fi
# our CPU engine and gigatoken at 4 and 8 threads on one file (the first H200 run had ours on
# english_prose with llama3 and o200k_base at 16 threads no faster than at 2 here, while the
# other files scaled): how each scales, before the full table (which stays at the log's end)
if has_step scale; then
  for th in 4 8; do
    step "cpu engines, $th threads" 40 "$OUT/cpu_bench.log" \
      $PY benchmarks/bench.py --models gpt2,llama3,o200k_base --engines "ours${ENGINES#ours,hf,tiktoken}" \
        --files english_prose --threads "$th" --repeat 3 --check-docs 20 --max-mb "$MAX_MB"
  done
fi
# our CPU engine on text it has not seen (bench.py --unseen: a fresh process per run, 4 MB
# warm-up, the 4 MB before it timed), the shared word table off and on (on by default from 8
# threads; decision 0019, addendum of 2026-12-04: measured only with 16 workers on 2 cores)
if has_step scale; then
  for sw in 0 1; do
    step "cpu unseen, shared words $sw" 45 "$OUT/cpu_bench.log" \
      env GPU_TOK_SHARED_WORDS=$sw $PY benchmarks/bench.py --unseen --models gpt2 \
        --files english_prose,code,multilingual --engines ours --threads "$THREADS" --repeat 2 --check-docs 0 \
        --max-mb 4
  done
fi
has_step cpu && step "cpu engines" 110 "$OUT/cpu_bench.log" \
  $PY benchmarks/bench.py --models "${GPU_CHECK_CPU_MODELS:-gpt2,llama3,o200k_base}" --engines "$ENGINES" \
    --threads "$THREADS" --repeat 2 \
    --check-docs 50 --max-mb "$MAX_MB"

# Nsight Compute on the first batch's kernels of one case (gpt2, english_prose): throughput
# against the card's peaks, occupancy, registers, warp stalls, memory traffic (ncu.log); the
# card's own clocks (--clock-control none), so the kernels run as they do in gpu_bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
if has_step ncu && [ "$REAL" = 1 ] && [ -n "$NCU" ]; then
  step "ncu" "${GPU_CHECK_NCU_LIMIT:-120}" "$OUT/ncu.log" \
    "$NCU" --clock-control none --kernel-name "regex:k_(short|long|clear|insert|resolve|counts|scatter|chunk|fill|rows|place)" \
      --launch-count "${GPU_CHECK_NCU_LAUNCHES:-16}" --section SpeedOfLight --section LaunchStats --section Occupancy \
      --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
      $PY benchmarks/gpu_bench.py --device cuda --models gpt2 --files english_prose --max-mb "$MAX_MB" --repeat 1 \
        --threads "$THREADS" --out /tmp/gpu_tok_ncu
elif has_step ncu; then
  echo "ncu: left out (no GPU, or no ncu on this machine)" | tee -a "$OUT/ncu.log"
fi

# ---------------------------------------------------------------- 5. summary
{
  echo "# GPU check $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo '```'
  cat "$OUT/card.txt"
  echo
  cat "$OUT/steps.txt"
  echo '```'
  echo
  [ -f "$OUT/gpu_bench.md" ] && cat "$OUT/gpu_bench.md"
  echo
  echo "Fixed costs (benchmarks/gpu_overheads.py):"
  echo
  echo '```'
  grep -A8 '^fixed costs' "$OUT/gpu_bench.log" 2>/dev/null
  grep '^clocks' "$OUT/gpu_bench.log" 2>/dev/null
  echo '```'
  echo
  echo "The corpus job (gpu-tok encode, gpt2; its summary after each run):"
  echo
  echo '```'
  grep -E '^(== job: device|[0-9]+ documents, )' "$OUT/gpu_bench.log" 2>/dev/null | grep -v ': exit '
  echo '```'
  echo
  echo "CPU engines on $THREADS threads (benchmarks/bench.py):"
  echo
  echo '```'
  tail -n 45 "$OUT/cpu_bench.log" 2>/dev/null
  echo '```'
  echo
  echo "pytest: $(grep -E '(passed|failed|error)' "$OUT/pytest.log" 2>/dev/null | tail -n 1)"
} > "$OUT/summary.md"
cat "$OUT/summary.md"
# at most 8 files come back from a lent machine: steps.txt and card.txt are in summary.md
rm -f "$OUT/steps.txt" "$OUT/card.txt"
exit $FAILED
