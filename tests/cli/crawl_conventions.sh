# ca-crawl follows the shared CLI conventions: help, version, usage errors.
. "$(dirname "$0")/lib.bash"
crawl=$CA_BIN/ca-crawl

run "$crawl" --help
expect_code 0; expect_stdout "ops"; expect_stdout "modules"; expect_stdout "--jobs"; expect_stdout "--seed"; expect_stderr_empty

run "$crawl" --version
expect_code 0; expect_stdout "ca-crawl (cuda-agent)"

run "$crawl" --bogus ops
expect_code 64; expect_stderr "ca-crawl: error:"; expect_stderr "try 'ca-crawl --help'"
[ "$(wc -l <"$WORK/stderr")" -le 2 ] || fail "usage error longer than 2 lines"

run "$crawl" opz
expect_code 64; expect_stderr "did you mean 'ops'?"

run "$crawl"
expect_code 64; expect_stderr "ca-crawl: error:"
finish
