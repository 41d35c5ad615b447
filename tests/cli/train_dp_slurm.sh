# pipelines/slurm/train.sbatch, dry run (DRY_RUN=1, a stand-in scontrol): the store on the job's first node, a port
# from the job id, NVLink multicast off, srun over ca-train with the stage's arguments, a torchrun environment
# dropped; outside sbatch and without a stage it refuses to run.
source "$(dirname "$0")/lib.bash"
script="$CA_SOURCE_DIR/pipelines/slurm/train.sbatch"
mkdir -p "$WORK/bin"
printf '#!/bin/sh\n[ "$1 $2 $3" = "show hostnames gpu[07-08]" ] || exit 2\necho gpu07\necho gpu08\n' >"$WORK/bin/scontrol"
chmod +x "$WORK/bin/scontrol"
slurm=(env PATH="$WORK/bin:$PATH" SLURM_JOB_NODELIST='gpu[07-08]' SLURM_JOB_ID=123456 SLURM_SUBMIT_DIR=/src
       NCCL_NVLS_ENABLE=1 RANK=3 WORLD_SIZE=4 DRY_RUN=1)

run "${slurm[@]}" bash "$script" rft --device cuda --model /m --out '/o dir'
expect_code 0
expect_stdout "MASTER_ADDR=gpu07"
expect_stdout "MASTER_PORT=23456"
expect_stdout "NCCL_NVLS_ENABLE=0"
expect_stdout "TORCH_SYMM_MEM_DISABLE_MULTICAST=1"
expect_stdout "NVSHMEM_DISABLE_NVLS=1"
expect_stdout 'srun --kill-on-bad-exit=1 --export=ALL /src/build/bin/ca-train rft --device cuda --model /m --out /o\ dir'

run "${slurm[@]}" MASTER_PORT=29999 CA_TRAIN=/opt/ca-train bash "$script" rft
expect_code 0
expect_stdout "MASTER_PORT=29999"
expect_stdout "--export=ALL /opt/ca-train rft"

# The tasks get no torchrun variables (they would win over Slurm's in train/distributed.h).
printf '#!/bin/sh\nenv | grep -E "^(RANK|WORLD_SIZE)=" || echo none\n' >"$WORK/bin/srun"
chmod +x "$WORK/bin/srun"
run env PATH="$WORK/bin:$PATH" SLURM_JOB_NODELIST='gpu[07-08]' SLURM_JOB_ID=1 RANK=3 WORLD_SIZE=4 bash "$script" rft
expect_code 0
expect_stdout "none"

run env -u SLURM_JOB_NODELIST bash "$script" rft
[ "$code" -ne 0 ] || fail "ran outside sbatch"
expect_stderr "SLURM_JOB_NODELIST"
run "${slurm[@]}" bash "$script"
expect_code 64
expect_stderr "usage"
exit $((failures > 0))
