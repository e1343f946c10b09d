// glibc allocator figures for scripts/soak.mjs (Linux, glibc 2.33 or later), loaded with LD_PRELOAD:
//
//   gcc -O2 -shared -fPIC -o /tmp/malloc-stats.so scripts/soak/malloc-stats.c -lpthread
//   LD_PRELOAD=/tmp/malloc-stats.so MALLINFO_FILE=/tmp/mallinfo node --expose-gc scripts/soak.mjs
//
// A thread writes mallinfo2() every 50 ms to $MALLINFO_FILE.<pid>: the bytes of all arenas, the
// bytes handed out by malloc and not freed (every allocation of the process: the addon's Rust
// heap, Node's C++ side, libuv, OpenSSL), the free bytes glibc keeps in its arenas, and the
// bytes in mmapped blocks. With TRIM=1 it first calls malloc_trim(0), which gives free pages back
// to the system. Without either variable it does nothing.
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *loop(void *arg) {
  (void)arg;
  const char *path = getenv("MALLINFO_FILE");
  const char *trim_env = getenv("TRIM");
  int trim = trim_env && trim_env[0] == '1';
  char file[4096], partial[4200];
  if (path) {
    snprintf(file, sizeof file, "%s.%d", path, (int)getpid());
    snprintf(partial, sizeof partial, "%s.partial", file);
  }
  for (;;) {
    usleep(50000);
    if (trim) malloc_trim(0);
    if (!path) continue;
    struct mallinfo2 m = mallinfo2();
    char line[200];
    int n = snprintf(line, sizeof line, "%zu %zu %zu %zu\n", m.arena, m.uordblks, m.fordblks, m.hblkhd);
    // Written aside and renamed: a reader never sees a half-written line.
    int fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) continue;
    int written = write(fd, line, (size_t)n) == n;
    close(fd);
    if (written) rename(partial, file);
  }
  return 0;
}

__attribute__((constructor)) static void start(void) {
  if (!getenv("MALLINFO_FILE") && !getenv("TRIM")) return;
  pthread_t thread;
  if (pthread_create(&thread, 0, loop, 0) == 0) pthread_detach(thread);
}
