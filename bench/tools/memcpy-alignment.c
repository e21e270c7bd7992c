// How fast glibc's memcpy copies a buffer whose destination is at a given
// offset from a page-aligned source, in one call or in pieces of 2 KiB
// (native/core/src/bytes.rs, docs/design.md "Copies that start at an odd
// address"). Both buffers stay in the cache: this measures the copy itself.
//   cc -O2 -o /tmp/memcpy-alignment bench/tools/memcpy-alignment.c
//   /tmp/memcpy-alignment <bytes> <piece bytes, 0 = one call> <destination offset>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <bytes> <piece bytes, 0 = one call> <destination offset>\n", argv[0]);
    return 2;
  }
  size_t n = strtoul(argv[1], 0, 10), piece = strtoul(argv[2], 0, 10), off = strtoul(argv[3], 0, 10);
  char *src = aligned_alloc(4096, 1 << 22), *dst = aligned_alloc(4096, 1 << 22);
  if (!src || !dst || n + off > (1 << 22)) return 2;
  memset(src, 1, 1 << 22);
  memset(dst, 2, 1 << 22);
  long iters = (long)(4e9 / n);
  double t0 = now();
  for (long i = 0; i < iters; i++) {
    if (piece == 0) memcpy(dst + off, src, n);
    else
      for (size_t o = 0; o < n; o += piece) memcpy(dst + off + o, src + o, n - o < piece ? n - o : piece);
    __asm__ volatile("" ::"r"(dst) : "memory");
  }
  double t = now() - t0;
  printf("%zu bytes, %s, destination offset %zu: %.1f GB/s\n", n, piece ? "in pieces" : "one memcpy", off, (double)n * iters / t / 1e9);
  return 0;
}
