# build — builds what the other tasks run: warpd, the ASan daemon and api_devices, every tests/gpu
# program (bench/lib/gpu_tasks.sh's gpu_build), and the make targets given; the build log goes to $OUT.
#   bench/gpu.sh build [targets...]   (e.g. build/bench/reduce/bench_reduce build/bench/launch/bench_smalljob)
# shellcheck disable=SC2034 # t0: read by gpu_build
t0=$(date +%s)
gpu_commit_line
gpu_build "$@" || exit 1
