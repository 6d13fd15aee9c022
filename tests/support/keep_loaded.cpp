// Preloaded into the sanitizer builds' processes (scripts/sanitizer-env.sh):
// dlclose does nothing, so the Vulkan loader cannot unmap the driver and the
// layers at exit. LeakSanitizer then still sees their globals (no false
// leaks of what those hold) and can name their frames in a report.
extern "C" int dlclose(void*) { return 0; }
