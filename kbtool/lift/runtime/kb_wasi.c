/* kbtool runnable runtime: a WASI preview-1 shim on POSIX for lifted command modules.

   Every function has the import's wasm signature and works on the linear memory M.
   File descriptors 0-2 are the host's; each `--dir HOST[::GUEST]` is a pre-opened
   directory (fd 3, 4, ...); path_open resolves paths under a pre-opened directory only
   (absolute paths and `..` leaving it give ENOTCAPABLE, symbolic links are not followed
   out of it by openat2 RESOLVE_BENEATH where the kernel has it). The environment is
   empty unless `--env NAME=VALUE` (or `--env NAME`, the host's value) is given, as with
   `wasmtime run`. Calls the shim does not implement return ENOSYS. */
#define _GNU_SOURCE
#include "kb_runtime.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum {
  W_SUCCESS = 0, W_2BIG = 1, W_ACCES = 2, W_AGAIN = 6, W_BADF = 8, W_BUSY = 10, W_EXIST = 20,
  W_FAULT = 21, W_FBIG = 22, W_INTR = 27, W_INVAL = 28, W_IO = 29, W_ISDIR = 31, W_LOOP = 32,
  W_MFILE = 33, W_NAMETOOLONG = 37, W_NFILE = 41, W_NODEV = 43, W_NOENT = 44, W_NOMEM = 48,
  W_NOSPC = 51, W_NOSYS = 52, W_NOTDIR = 54, W_NOTEMPTY = 55, W_NOTSUP = 58, W_NOTTY = 59,
  W_NXIO = 60, W_OVERFLOW = 61, W_PERM = 63, W_PIPE = 64, W_RANGE = 68, W_ROFS = 69,
  W_SPIPE = 70, W_XDEV = 75, W_NOTCAPABLE = 76
};

static int32_t werr(int e) {
  switch (e) {
    case 0: return W_SUCCESS;
    case E2BIG: return W_2BIG;
    case EACCES: return W_ACCES;
    case EAGAIN: return W_AGAIN;
    case EBADF: return W_BADF;
    case EBUSY: return W_BUSY;
    case EEXIST: return W_EXIST;
    case EFAULT: return W_FAULT;
    case EFBIG: return W_FBIG;
    case EINTR: return W_INTR;
    case EINVAL: return W_INVAL;
    case EIO: return W_IO;
    case EISDIR: return W_ISDIR;
    case ELOOP: return W_LOOP;
    case EMFILE: return W_MFILE;
    case ENAMETOOLONG: return W_NAMETOOLONG;
    case ENFILE: return W_NFILE;
    case ENODEV: return W_NODEV;
    case ENOENT: return W_NOENT;
    case ENOMEM: return W_NOMEM;
    case ENOSPC: return W_NOSPC;
    case ENOSYS: return W_NOSYS;
    case ENOTDIR: return W_NOTDIR;
    case ENOTEMPTY: return W_NOTEMPTY;
    case EOPNOTSUPP: return W_NOTSUP;
    case ENOTTY: return W_NOTTY;
    case ENXIO: return W_NXIO;
    case EOVERFLOW: return W_OVERFLOW;
    case EPERM: return W_PERM;
    case EPIPE: return W_PIPE;
    case ERANGE: return W_RANGE;
    case EROFS: return W_ROFS;
    case ESPIPE: return W_SPIPE;
    case EXDEV: return W_XDEV;
    default: return W_IO;
  }
}

/* ---------------------------------------------------------------- memory access */

#define CHECK(addr, len) do { if (!kb_mem_ok((uint32_t)(addr), (uint64_t)(len))) return W_FAULT; } while (0)
static inline void st8(uint32_t a, uint8_t v) { M[a] = v; }
static inline void st16(uint32_t a, uint16_t v) { memcpy(M + a, &v, 2); }
static inline void st32(uint32_t a, uint32_t v) { memcpy(M + a, &v, 4); }
static inline void st64(uint32_t a, uint64_t v) { memcpy(M + a, &v, 8); }
static inline uint32_t ld32(uint32_t a) { uint32_t v; memcpy(&v, M + a, 4); return v; }
static inline uint64_t ld64(uint32_t a) { uint64_t v; memcpy(&v, M + a, 8); return v; }

/* ---------------------------------------------------------------- descriptors */

typedef struct {
  int used;
  int host;          /* host descriptor */
  int preopen;       /* a pre-opened directory */
  int is_dir;
  char *guest;       /* its guest name */
  DIR *dir;          /* fd_readdir stream */
} wfd;

static wfd *fds;
static uint32_t nfds;
static int kb_argc, kb_nenv;
static char **kb_argv, **kb_env;

static int32_t alloc_fd(int host, int is_dir) {
  for (uint32_t i = 3; i < nfds; i++)
    if (!fds[i].used) { fds[i] = (wfd){1, host, 0, is_dir, NULL, NULL}; return (int32_t)i; }
  wfd *n = realloc(fds, (nfds + 8) * sizeof *n);
  if (!n) return -1;
  memset(n + nfds, 0, 8 * sizeof *n);
  fds = n;
  uint32_t i = nfds;
  nfds += 8;
  fds[i] = (wfd){1, host, 0, is_dir, NULL, NULL};
  return (int32_t)i;
}

static wfd *get_fd(int32_t fd) {
  if ((uint32_t)fd >= nfds || !fds[fd].used) return NULL;
  return &fds[fd];
}

void kb_wasi_init(int argc, char **argv, int nenv, char **env, int ndirs, char **dirs) {
  kb_argc = argc;
  kb_argv = argv;
  kb_env = calloc((size_t)nenv + 1, sizeof *kb_env);
  for (int i = 0; i < nenv; i++) {
    if (strchr(env[i], '=')) { kb_env[kb_nenv++] = env[i]; continue; }
    const char *v = getenv(env[i]);
    if (!v) continue;
    size_t n = strlen(env[i]) + strlen(v) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s=%s", env[i], v);
    kb_env[kb_nenv++] = s;
  }
  nfds = 3;
  fds = calloc(nfds, sizeof *fds);
  for (int i = 0; i < 3; i++) fds[i] = (wfd){1, i, 0, 0, NULL, NULL};
  for (int i = 0; i < ndirs; i++) {
    char *host = strdup(dirs[i]), *guest = host, *sep = strstr(host, "::");
    if (sep) { *sep = 0; guest = sep + 2; }
    int h = open(host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (h < 0) {
      fprintf(stderr, "Error: failed to open directory %s: %s\n", host, strerror(errno));
      exit(1);
    }
    int32_t fd = alloc_fd(h, 1);
    fds[fd].preopen = 1;
    fds[fd].guest = guest;
  }
}

/* ---------------------------------------------------------------- args, environ */

static int32_t strings_sizes(int n, char **v, int32_t count_ptr, int32_t size_ptr) {
  CHECK(count_ptr, 4);
  CHECK(size_ptr, 4);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) total += strlen(v[i]) + 1;
  st32((uint32_t)count_ptr, (uint32_t)n);
  st32((uint32_t)size_ptr, (uint32_t)total);
  return W_SUCCESS;
}

static int32_t strings_get(int n, char **v, int32_t ptrs, int32_t buf) {
  uint64_t total = 0;
  for (int i = 0; i < n; i++) total += strlen(v[i]) + 1;
  CHECK(ptrs, (uint64_t)n * 4);
  CHECK(buf, total);
  uint32_t at = (uint32_t)buf;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(v[i]) + 1;
    st32((uint32_t)ptrs + 4u * (uint32_t)i, at);
    memcpy(M + at, v[i], len);
    at += (uint32_t)len;
  }
  return W_SUCCESS;
}

int32_t kb_wasi_args_sizes_get(int32_t c, int32_t s) { return strings_sizes(kb_argc, kb_argv, c, s); }
int32_t kb_wasi_args_get(int32_t p, int32_t b) { return strings_get(kb_argc, kb_argv, p, b); }
int32_t kb_wasi_environ_sizes_get(int32_t c, int32_t s) { return strings_sizes(kb_nenv, kb_env, c, s); }
int32_t kb_wasi_environ_get(int32_t p, int32_t b) { return strings_get(kb_nenv, kb_env, p, b); }

/* ---------------------------------------------------------------- clocks, random, exit */

static int host_clock(int32_t id, clockid_t *out) {
  switch (id) {
    case 0: *out = CLOCK_REALTIME; return 1;
    case 1: *out = CLOCK_MONOTONIC; return 1;
    case 2: *out = CLOCK_PROCESS_CPUTIME_ID; return 1;
    case 3: *out = CLOCK_THREAD_CPUTIME_ID; return 1;
    default: return 0;
  }
}

int32_t kb_wasi_clock_res_get(int32_t id, int32_t out) {
  clockid_t c;
  struct timespec ts;
  if (!host_clock(id, &c)) return W_INVAL;
  CHECK(out, 8);
  if (clock_getres(c, &ts)) return werr(errno);
  st64((uint32_t)out, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
  return W_SUCCESS;
}

int32_t kb_wasi_clock_time_get(int32_t id, int64_t precision, int32_t out) {
  clockid_t c;
  struct timespec ts;
  (void)precision;
  if (!host_clock(id, &c)) return W_INVAL;
  CHECK(out, 8);
  if (clock_gettime(c, &ts)) return werr(errno);
  st64((uint32_t)out, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
  return W_SUCCESS;
}

int32_t kb_wasi_random_get(int32_t buf, int32_t len) {
  CHECK(buf, (uint32_t)len);
  uint32_t done = 0;
  while (done < (uint32_t)len) {
    ssize_t r = getrandom(M + (uint32_t)buf + done, (uint32_t)len - done, 0);
    if (r < 0) { if (errno == EINTR) continue; return werr(errno); }
    done += (uint32_t)r;
  }
  return W_SUCCESS;
}

void kb_wasi_proc_exit(int32_t code) { kb_exit(code); }
int32_t kb_wasi_proc_raise(int32_t sig) { (void)sig; return W_NOSYS; }
int32_t kb_wasi_sched_yield(void) { sched_yield(); return W_SUCCESS; }

/* ---------------------------------------------------------------- fd I/O */

static int32_t iovecs(int32_t iovs, int32_t n, struct iovec **out) {
  CHECK(iovs, (uint64_t)(uint32_t)n * 8);
  struct iovec *v = calloc((size_t)(uint32_t)n + 1, sizeof *v);
  if (!v) return W_NOMEM;
  for (uint32_t i = 0; i < (uint32_t)n; i++) {
    uint32_t base = ld32((uint32_t)iovs + 8 * i), len = ld32((uint32_t)iovs + 8 * i + 4);
    if (!kb_mem_ok(base, len)) { free(v); return W_FAULT; }
    v[i].iov_base = M + base;
    v[i].iov_len = len;
  }
  *out = v;
  return W_SUCCESS;
}

static int32_t do_io(int32_t fd, int32_t iovs, int32_t n, int64_t off, int positional,
                     int writing, int32_t nret) {
  wfd *f = get_fd(fd);
  struct iovec *v;
  if (!f) return W_BADF;
  if (f->is_dir) return W_ISDIR;
  CHECK(nret, 4);
  int32_t e = iovecs(iovs, n, &v);
  if (e) return e;
  ssize_t r;
  do {
    if (positional)
      r = writing ? pwritev(f->host, v, n, off) : preadv(f->host, v, n, off);
    else
      r = writing ? writev(f->host, v, n) : readv(f->host, v, n);
  } while (r < 0 && errno == EINTR);
  free(v);
  if (r < 0) return werr(errno);
  st32((uint32_t)nret, (uint32_t)r);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_write(int32_t fd, int32_t iovs, int32_t n, int32_t nret) {
  return do_io(fd, iovs, n, 0, 0, 1, nret);
}
int32_t kb_wasi_fd_read(int32_t fd, int32_t iovs, int32_t n, int32_t nret) {
  return do_io(fd, iovs, n, 0, 0, 0, nret);
}
int32_t kb_wasi_fd_pwrite(int32_t fd, int32_t iovs, int32_t n, int64_t off, int32_t nret) {
  return do_io(fd, iovs, n, off, 1, 1, nret);
}
int32_t kb_wasi_fd_pread(int32_t fd, int32_t iovs, int32_t n, int64_t off, int32_t nret) {
  return do_io(fd, iovs, n, off, 1, 0, nret);
}

int32_t kb_wasi_fd_close(int32_t fd) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  if (f->preopen) return W_NOTSUP;
  if (f->dir) closedir(f->dir);
  else if (fd > 2) close(f->host);
  memset(f, 0, sizeof *f);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_seek(int32_t fd, int64_t off, int32_t whence, int32_t out) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  if (f->is_dir) return W_BADF;
  CHECK(out, 8);
  int w = whence == 0 ? SEEK_SET : whence == 1 ? SEEK_CUR : whence == 2 ? SEEK_END : -1;
  if (w < 0) return W_INVAL;
  off_t r = lseek(f->host, (off_t)off, w);
  if (r < 0) return werr(errno);
  st64((uint32_t)out, (uint64_t)r);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_tell(int32_t fd, int32_t out) { return kb_wasi_fd_seek(fd, 0, 1, out); }

static uint8_t filetype(mode_t m) {
  if (S_ISREG(m)) return 4;
  if (S_ISDIR(m)) return 3;
  if (S_ISCHR(m)) return 2;
  if (S_ISBLK(m)) return 1;
  if (S_ISLNK(m)) return 7;
  if (S_ISSOCK(m)) return 6;
  return 0;
}

int32_t kb_wasi_fd_fdstat_get(int32_t fd, int32_t out) {
  wfd *f = get_fd(fd);
  struct stat st;
  if (!f) return W_BADF;
  CHECK(out, 24);
  if (fstat(f->host, &st)) return werr(errno);
  int fl = fcntl(f->host, F_GETFL);
  uint16_t flags = 0;
  if (fl >= 0) {
    if (fl & O_APPEND) flags |= 1;
    if (fl & O_NONBLOCK) flags |= 4;
  }
  memset(M + (uint32_t)out, 0, 24);
  st8((uint32_t)out, filetype(st.st_mode));
  st16((uint32_t)out + 2, flags);
  uint64_t rights = 0x1FFFFFFFull;
  if (S_ISCHR(st.st_mode) && isatty(f->host)) rights &= ~(uint64_t)(0x4 | 0x20); /* no seek/tell */
  st64((uint32_t)out + 8, rights);
  st64((uint32_t)out + 16, 0x1FFFFFFFull);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_fdstat_set_flags(int32_t fd, int32_t flags) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  int fl = fcntl(f->host, F_GETFL);
  if (fl < 0) return werr(errno);
  fl &= ~(O_APPEND | O_NONBLOCK);
  if (flags & 1) fl |= O_APPEND;
  if (flags & 4) fl |= O_NONBLOCK;
  if (fcntl(f->host, F_SETFL, fl)) return werr(errno);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_fdstat_set_rights(int32_t fd, int64_t a, int64_t b) {
  (void)a; (void)b;
  return get_fd(fd) ? W_SUCCESS : W_BADF;
}

static void put_filestat(uint32_t out, const struct stat *st) {
  memset(M + out, 0, 64);
  st64(out, (uint64_t)st->st_dev);
  st64(out + 8, (uint64_t)st->st_ino);
  st8(out + 16, filetype(st->st_mode));
  st64(out + 24, (uint64_t)st->st_nlink);
  st64(out + 32, (uint64_t)st->st_size);
  st64(out + 40, (uint64_t)st->st_atim.tv_sec * 1000000000ull + (uint64_t)st->st_atim.tv_nsec);
  st64(out + 48, (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec);
  st64(out + 56, (uint64_t)st->st_ctim.tv_sec * 1000000000ull + (uint64_t)st->st_ctim.tv_nsec);
}

int32_t kb_wasi_fd_filestat_get(int32_t fd, int32_t out) {
  wfd *f = get_fd(fd);
  struct stat st;
  if (!f) return W_BADF;
  CHECK(out, 64);
  if (fstat(f->host, &st)) return werr(errno);
  put_filestat((uint32_t)out, &st);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_filestat_set_size(int32_t fd, int64_t size) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  return ftruncate(f->host, (off_t)size) ? werr(errno) : W_SUCCESS;
}

static int32_t set_times(int dirfd, const char *path, int64_t atim, int64_t mtim, int32_t fl, int flags) {
  struct timespec ts[2];
  ts[0].tv_sec = atim / 1000000000; ts[0].tv_nsec = atim % 1000000000;
  ts[1].tv_sec = mtim / 1000000000; ts[1].tv_nsec = mtim % 1000000000;
  if (!(fl & 1)) ts[0].tv_nsec = (fl & 2) ? UTIME_NOW : UTIME_OMIT;
  if (!(fl & 4)) ts[1].tv_nsec = (fl & 8) ? UTIME_NOW : UTIME_OMIT;
  int r = path ? utimensat(dirfd, path, ts, flags) : futimens(dirfd, ts);
  return r ? werr(errno) : W_SUCCESS;
}

int32_t kb_wasi_fd_filestat_set_times(int32_t fd, int64_t a, int64_t m, int32_t fl) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  return set_times(f->host, NULL, a, m, fl, 0);
}

int32_t kb_wasi_fd_sync(int32_t fd) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  return fsync(f->host) ? werr(errno) : W_SUCCESS;
}
int32_t kb_wasi_fd_datasync(int32_t fd) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  return fdatasync(f->host) ? werr(errno) : W_SUCCESS;
}
int32_t kb_wasi_fd_advise(int32_t fd, int64_t off, int64_t len, int32_t adv) {
  (void)off; (void)len; (void)adv;
  return get_fd(fd) ? W_SUCCESS : W_BADF;
}
int32_t kb_wasi_fd_allocate(int32_t fd, int64_t off, int64_t len) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  int r = posix_fallocate(f->host, (off_t)off, (off_t)len);
  return r ? werr(r) : W_SUCCESS;
}

int32_t kb_wasi_fd_prestat_get(int32_t fd, int32_t out) {
  wfd *f = get_fd(fd);
  if (!f || !f->preopen) return W_BADF;
  CHECK(out, 8);
  st32((uint32_t)out, 0);
  st32((uint32_t)out + 4, (uint32_t)strlen(f->guest));
  return W_SUCCESS;
}

int32_t kb_wasi_fd_prestat_dir_name(int32_t fd, int32_t buf, int32_t len) {
  wfd *f = get_fd(fd);
  if (!f || !f->preopen) return W_BADF;
  size_t n = strlen(f->guest);
  if ((uint32_t)len < n) return W_NAMETOOLONG;
  CHECK(buf, n);
  memcpy(M + (uint32_t)buf, f->guest, n);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_renumber(int32_t from, int32_t to) {
  wfd *a = get_fd(from), *b = get_fd(to);
  if (!a || !b) return W_BADF;
  if (a == b) return W_SUCCESS;
  if (b->preopen || a->preopen) return W_NOTSUP;
  if (b->dir) closedir(b->dir);
  else if (to > 2) close(b->host);
  *b = *a;
  memset(a, 0, sizeof *a);
  return W_SUCCESS;
}

int32_t kb_wasi_fd_readdir(int32_t fd, int32_t buf, int32_t len, int64_t cookie, int32_t out) {
  wfd *f = get_fd(fd);
  if (!f) return W_BADF;
  if (!f->is_dir) return W_NOTDIR;
  CHECK(buf, (uint32_t)len);
  CHECK(out, 4);
  if (!f->dir) {
    int d = openat(f->host, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return werr(errno);
    f->dir = fdopendir(d);
    if (!f->dir) { close(d); return werr(errno); }
  }
  rewinddir(f->dir);
  uint64_t idx = 0;
  uint32_t used = 0;
  struct dirent *e;
  while ((e = readdir(f->dir)) != NULL) {
    if (idx++ < (uint64_t)cookie) continue;
    uint8_t hdr[24];
    uint32_t namlen = (uint32_t)strlen(e->d_name);
    uint64_t next = idx, ino = e->d_ino;
    uint8_t t = e->d_type == DT_DIR ? 3 : e->d_type == DT_REG ? 4 : e->d_type == DT_LNK ? 7 :
                e->d_type == DT_CHR ? 2 : e->d_type == DT_BLK ? 1 : e->d_type == DT_SOCK ? 6 : 0;
    memset(hdr, 0, sizeof hdr);
    memcpy(hdr, &next, 8);
    memcpy(hdr + 8, &ino, 8);
    memcpy(hdr + 16, &namlen, 4);
    hdr[20] = t;
    for (uint32_t k = 0; k < 24 && used < (uint32_t)len; k++) M[(uint32_t)buf + used++] = hdr[k];
    for (uint32_t k = 0; k < namlen && used < (uint32_t)len; k++)
      M[(uint32_t)buf + used++] = (uint8_t)e->d_name[k];
    if (used >= (uint32_t)len) break;
  }
  st32((uint32_t)out, used);
  return W_SUCCESS;
}

/* ---------------------------------------------------------------- paths */

/* the guest path as a C string, relative and not leaving the directory; NULL: refused */
static char *guest_path(int32_t ptr, int32_t len, int32_t *err) {
  if (!kb_mem_ok((uint32_t)ptr, (uint32_t)len)) { *err = W_FAULT; return NULL; }
  char *p = malloc((size_t)(uint32_t)len + 2);
  if (!p) { *err = W_NOMEM; return NULL; }
  memcpy(p, M + (uint32_t)ptr, (uint32_t)len);
  p[(uint32_t)len] = 0;
  if (strlen(p) != (uint32_t)len) { free(p); *err = W_INVAL; return NULL; }
  if (p[0] == '/') { free(p); *err = W_NOTCAPABLE; return NULL; }
  int depth = 0;
  for (char *s = p; *s;) {
    char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.') depth--;
    else if (n && !(n == 1 && s[0] == '.')) depth++;
    if (depth < 0) { free(p); *err = W_NOTCAPABLE; return NULL; }
    s += n;
    while (*s == '/') s++;
  }
  if (!*p) { p[0] = '.'; p[1] = 0; }
  return p;
}

static int dir_of(int32_t fd, int32_t *err) {
  wfd *f = get_fd(fd);
  if (!f) { *err = W_BADF; return -1; }
  if (!f->is_dir) { *err = W_NOTDIR; return -1; }
  return f->host;
}

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
struct kb_open_how { uint64_t flags, mode, resolve; };

static int open_beneath(int dirfd, const char *path, int flags, mode_t mode) {
  struct kb_open_how how = {(uint64_t)flags, (uint64_t)((flags & O_CREAT) ? mode : 0), 0x08 /* RESOLVE_BENEATH */};
  long r = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
  if (r >= 0 || (errno != ENOSYS && errno != EPERM)) return (int)r;
  return openat(dirfd, path, flags, mode);
}

int32_t kb_wasi_path_open(int32_t dirfd, int32_t dirflags, int32_t path, int32_t plen,
                          int32_t oflags, int64_t rights, int64_t inheriting, int32_t fdflags,
                          int32_t out) {
  int32_t err = 0;
  (void)inheriting;
  int d = dir_of(dirfd, &err);
  if (d < 0) return err;
  CHECK(out, 4);
  char *p = guest_path(path, plen, &err);
  if (!p) return err;
  int flags = O_CLOEXEC;
  uint64_t r = (uint64_t)rights;
  int want_write = (r & 0x40) || (r & (1ull << 22)) /* fd_filestat_set_size */ || (fdflags & 1);
  int want_read = (r & 0x2) || (r & (1ull << 14)) /* fd_readdir */;
  if (want_write && want_read) flags |= O_RDWR;
  else if (want_write) flags |= O_WRONLY;
  else flags |= O_RDONLY;
  if (oflags & 1) flags |= O_CREAT;
  if (oflags & 2) flags |= O_DIRECTORY;
  if (oflags & 4) flags |= O_EXCL;
  if (oflags & 8) flags |= O_TRUNC;
  if (fdflags & 1) flags |= O_APPEND;
  if (fdflags & 4) flags |= O_NONBLOCK;
  if (fdflags & (2 | 8 | 16)) flags |= O_SYNC;
  if (!(dirflags & 1)) flags |= O_NOFOLLOW;
  int h = open_beneath(d, p, flags, 0666);
  if (h < 0 && errno == EISDIR && (flags & O_ACCMODE) != O_RDONLY) {
    /* a directory asked for with write rights: open it read-only (wasmtime does) */
    h = open_beneath(d, p, (flags & ~O_ACCMODE) | O_RDONLY, 0666);
  }
  free(p);
  if (h < 0) return errno == ELOOP && !(dirflags & 1) ? W_LOOP : werr(errno);
  struct stat st;
  int is_dir = fstat(h, &st) == 0 && S_ISDIR(st.st_mode);
  int32_t fd = alloc_fd(h, is_dir);
  if (fd < 0) { close(h); return W_NOMEM; }
  st32((uint32_t)out, (uint32_t)fd);
  return W_SUCCESS;
}

int32_t kb_wasi_path_filestat_get(int32_t dirfd, int32_t flags, int32_t path, int32_t plen, int32_t out) {
  int32_t err = 0;
  int d = dir_of(dirfd, &err);
  if (d < 0) return err;
  CHECK(out, 64);
  char *p = guest_path(path, plen, &err);
  if (!p) return err;
  struct stat st;
  int r = fstatat(d, p, &st, (flags & 1) ? 0 : AT_SYMLINK_NOFOLLOW);
  free(p);
  if (r) return werr(errno);
  put_filestat((uint32_t)out, &st);
  return W_SUCCESS;
}

int32_t kb_wasi_path_filestat_set_times(int32_t dirfd, int32_t flags, int32_t path, int32_t plen,
                                        int64_t a, int64_t m, int32_t fl) {
  int32_t err = 0;
  int d = dir_of(dirfd, &err);
  if (d < 0) return err;
  char *p = guest_path(path, plen, &err);
  if (!p) return err;
  int32_t r = set_times(d, p, a, m, fl, (flags & 1) ? 0 : AT_SYMLINK_NOFOLLOW);
  free(p);
  return r;
}

#define PATH_OP(name, CALL)                                                                  \
  int32_t name(int32_t dirfd, int32_t path, int32_t plen) {                                 \
    int32_t err = 0;                                                                         \
    int d = dir_of(dirfd, &err);                                                             \
    if (d < 0) return err;                                                                   \
    char *p = guest_path(path, plen, &err);                                                  \
    if (!p) return err;                                                                      \
    int r = CALL;                                                                            \
    int e = errno;                                                                           \
    free(p);                                                                                 \
    return r ? werr(e) : W_SUCCESS;                                                          \
  }
PATH_OP(kb_wasi_path_create_directory, mkdirat(d, p, 0777))
PATH_OP(kb_wasi_path_remove_directory, unlinkat(d, p, AT_REMOVEDIR))
PATH_OP(kb_wasi_path_unlink_file, unlinkat(d, p, 0))

int32_t kb_wasi_path_rename(int32_t fd1, int32_t p1, int32_t l1, int32_t fd2, int32_t p2, int32_t l2) {
  int32_t err = 0;
  int d1 = dir_of(fd1, &err), d2;
  if (d1 < 0) return err;
  if ((d2 = dir_of(fd2, &err)) < 0) return err;
  char *a = guest_path(p1, l1, &err);
  if (!a) return err;
  char *b = guest_path(p2, l2, &err);
  if (!b) { free(a); return err; }
  int r = renameat(d1, a, d2, b), e = errno;
  free(a);
  free(b);
  return r ? werr(e) : W_SUCCESS;
}

int32_t kb_wasi_path_readlink(int32_t dirfd, int32_t path, int32_t plen, int32_t buf, int32_t len, int32_t out) {
  int32_t err = 0;
  int d = dir_of(dirfd, &err);
  if (d < 0) return err;
  CHECK(buf, (uint32_t)len);
  CHECK(out, 4);
  char *p = guest_path(path, plen, &err);
  if (!p) return err;
  ssize_t r = readlinkat(d, p, (char *)M + (uint32_t)buf, (uint32_t)len);
  int e = errno;
  free(p);
  if (r < 0) return werr(e);
  st32((uint32_t)out, (uint32_t)r);
  return W_SUCCESS;
}

int32_t kb_wasi_path_symlink(int32_t old, int32_t olen, int32_t dirfd, int32_t path, int32_t plen) {
  int32_t err = 0;
  int d = dir_of(dirfd, &err);
  if (d < 0) return err;
  char *o = guest_path(old, olen, &err);
  if (!o) return err;
  char *p = guest_path(path, plen, &err);
  if (!p) { free(o); return err; }
  int r = symlinkat(o, d, p), e = errno;
  free(o);
  free(p);
  return r ? werr(e) : W_SUCCESS;
}

int32_t kb_wasi_path_link(int32_t fd1, int32_t flags, int32_t p1, int32_t l1, int32_t fd2, int32_t p2, int32_t l2) {
  int32_t err = 0;
  int d1 = dir_of(fd1, &err), d2;
  if (d1 < 0) return err;
  if ((d2 = dir_of(fd2, &err)) < 0) return err;
  char *a = guest_path(p1, l1, &err);
  if (!a) return err;
  char *b = guest_path(p2, l2, &err);
  if (!b) { free(a); return err; }
  int r = linkat(d1, a, d2, b, (flags & 1) ? AT_SYMLINK_FOLLOW : 0), e = errno;
  free(a);
  free(b);
  return r ? werr(e) : W_SUCCESS;
}

/* ---------------------------------------------------------------- poll */

int32_t kb_wasi_poll_oneoff(int32_t in, int32_t out, int32_t n, int32_t nret) {
  CHECK(in, (uint64_t)(uint32_t)n * 48);
  CHECK(out, (uint64_t)(uint32_t)n * 32);
  CHECK(nret, 4);
  if (n == 0) return W_INVAL;
  /* clocks: sleep for the shortest timeout; fd subscriptions are reported ready */
  uint64_t shortest = UINT64_MAX;
  int any_fd = 0;
  for (uint32_t i = 0; i < (uint32_t)n; i++) {
    uint32_t s = (uint32_t)in + 48 * i;
    if (M[s + 8] == 0) {
      uint64_t t = ld64(s + 24);
      uint16_t fl;
      memcpy(&fl, M + s + 40, 2);
      if (fl & 1) {  /* absolute */
        clockid_t c;
        struct timespec now;
        if (host_clock((int32_t)ld32(s + 16), &c) && !clock_gettime(c, &now)) {
          uint64_t cur = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
          t = t > cur ? t - cur : 0;
        }
      }
      if (t < shortest) shortest = t;
    } else {
      any_fd = 1;
    }
  }
  if (!any_fd && shortest != UINT64_MAX) {
    struct timespec ts = {(time_t)(shortest / 1000000000ull), (long)(shortest % 1000000000ull)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {}
  }
  uint32_t k = 0;
  for (uint32_t i = 0; i < (uint32_t)n; i++) {
    uint32_t s = (uint32_t)in + 48 * i, e = (uint32_t)out + 32 * k;
    uint8_t tag = M[s + 8];
    if (tag == 0 && any_fd) continue;
    memset(M + e, 0, 32);
    st64(e, ld64(s));
    st8(e + 10, tag);
    if (tag != 0) st64(e + 16, 1);
    k++;
  }
  st32((uint32_t)nret, k);
  return W_SUCCESS;
}

/* ---------------------------------------------------------------- sockets */

int32_t kb_wasi_sock_accept(int32_t fd, int32_t fl, int32_t out) { (void)fd; (void)fl; (void)out; return W_NOSYS; }
int32_t kb_wasi_sock_recv(int32_t fd, int32_t a, int32_t b, int32_t c, int32_t d, int32_t e) {
  (void)fd; (void)a; (void)b; (void)c; (void)d; (void)e; return W_NOSYS;
}
int32_t kb_wasi_sock_send(int32_t fd, int32_t a, int32_t b, int32_t c, int32_t d) {
  (void)fd; (void)a; (void)b; (void)c; (void)d; return W_NOSYS;
}
int32_t kb_wasi_sock_shutdown(int32_t fd, int32_t how) { (void)fd; (void)how; return W_NOSYS; }
