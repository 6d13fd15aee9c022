# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: how the ASan+UBSan
# binaries of build-san/ report. Any finding ends the process with an error;
# leaks are checked at exit, except those scripts/lsan.supp proves are inside
# the uninstrumented Vulkan loader, validation layers and Mesa.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Keeps the Vulkan driver and layers mapped until exit (tests/support/keep_loaded.cpp).
export LD_PRELOAD="$root/build-san/tests/liboa_keep_loaded.so"
unset root
