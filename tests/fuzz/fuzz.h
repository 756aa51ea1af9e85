/* fuzz.h - the entry points libFuzzer calls in a fuzz target (doc/fuzzing.md).
 * Each tests/fuzz/fuzz_<target>.c defines LLVMFuzzerTestOneInput, and
 * LLVMFuzzerInitialize when it needs set-up once per process.  A target
 * returns 0; it reports a bug by crashing (a sanitizer, or abort()). */
#ifndef WQ_FUZZ_H
#define WQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* WQ_FUZZ_H */
