// The power-loss model of the tests: an LD_PRELOAD library that keeps, beside
// a data directory, what of it a power cut would leave, so that a test can
// kill the process and put the directory back to exactly that
// (lib/power_cut.mjs). Test-only; see README.md.
//
// The model is POSIX's, strictly:
//  - a file's bytes are durable as of its last successful fsync or fdatasync,
//    as far as the file reached when the call began: the call copies them to
//    content/<id> in the state directory;
//  - a directory's entries are durable as of its last successful fsync: the
//    call records its listing. A file created, renamed or unlinked, or a
//    directory made, is durable only once the directory holding it is synced,
//    and a file's own fsync does not make its name durable.
// Everything else (open with O_CREAT, O_TRUNC or O_APPEND, write, pwrite,
// writev, ftruncate, truncate, rename, unlink, mkdir) changes only the live
// directory, and the cut undoes it unless a sync of the file or of its
// directory followed. Copying at the sync rather than journaling each write
// also covers writes this library cannot see: glibc's stdio and iostreams
// write through internal calls that LD_PRELOAD does not reach.
//
// A directory's entries are kept by its path: they become reachable once
// the entries naming the directories above it are durable too, in whatever
// order the syncs came (dstream syncs a new chain bottom up). A directory
// removed and made again under the same name would inherit the old one's
// durable entries; dstream removes no directories.
//
// A durable entry names its inode's content. rename over a file, unlink and
// remove may free an inode whose number a new file then takes: before they
// run, the content of the inode they free moves to a name of its own.
//
// Environment: DSTREAM_POWERLOSS_DIR, the data directory (it must exist), and
// DSTREAM_POWERLOSS_STATE, where the model lives: a directory outside the data
// directory, empty at the first start. A process that finds no model takes
// everything in the data directory as durable.
//
// The state directory: content/<id>, and `entries`, one line per durable entry
// "d - <path>" (a directory) or "f <id> <path>" (a file whose durable bytes
// are content/<id>, or none when that file does not exist), with <path>
// relative to the data directory. Each file is replaced by a rename, so a
// SIGKILL at any moment leaves a consistent model.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

enum { id_bytes = 48 };

struct entry {
    char kind;  // 'd' or 'f'
    char id[id_bytes];
    char* path;
};

static struct {
    int active;
    char data[PATH_MAX];
    size_t data_len;
    char state[PATH_MAX];
    pthread_mutex_t lock;
    struct entry* entries;
    size_t count;
    size_t capacity;
    unsigned long detached;  // inodes whose content moved aside, for unique names
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*rename)(const char*, const char*);
    int (*renameat)(int, const char*, int, const char*);
    int (*renameat2)(int, const char*, int, const char*, unsigned);
    int (*unlink)(const char*);
    int (*unlinkat)(int, const char*, int);
    int (*remove)(const char*);
} shim = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void die(const char* what, const char* path) {
    fprintf(stderr, "powerloss shim: %s %s: %s\n", what, path, strerror(errno));
    abort();
}

// snprintf that refuses to cut: a truncated path would model another file.
__attribute__((format(printf, 3, 4))) static void format(char* out, size_t size, const char* fmt,
                                                         ...) {
    va_list args;
    va_start(args, fmt);
    const int n = vsnprintf(out, size, fmt, args);
    va_end(args);
    if (n < 0 || (size_t)n >= size) die("path too long:", out);
}

// ---------------------------------------------------------------- paths

// The part of `abs` below the data directory ("" for the directory itself),
// or NULL when it is outside.
static const char* relative(const char* abs) {
    if (strncmp(abs, shim.data, shim.data_len) != 0) return NULL;
    if (abs[shim.data_len] == '\0') return abs + shim.data_len;
    if (abs[shim.data_len] == '/') return abs + shim.data_len + 1;
    return NULL;
}

static int fd_path(int fd, char* out) {
    char link[64];
    format(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, out, PATH_MAX - 1);
    if (n < 0) return 0;
    out[n] = '\0';
    return 1;
}

// The absolute path of `path` taken relative to `dirfd`, with its directory
// part resolved (symbolic links, "." and ".."); the last component stays as it
// is, since it may not exist. 0 when it cannot be resolved.
static int resolve(int dirfd, const char* path, char* out) {
    char joined[PATH_MAX];
    if (path[0] == '/') {
        format(joined, sizeof joined, "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD ? getcwd(base, sizeof base) == NULL : !fd_path(dirfd, base)) return 0;
        format(joined, sizeof joined, "%s/%s", base, path);
    }
    char* slash = strrchr(joined, '/');
    const char* name = slash + 1;
    *slash = '\0';
    char dir[PATH_MAX];
    if (realpath(joined[0] == '\0' ? "/" : joined, dir) == NULL) return 0;
    format(out, PATH_MAX, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
    return 1;
}

static void state_path(char* out, const char* a, const char* b) {
    format(out, PATH_MAX, "%s/%s%s", shim.state, a, b);
}

static void parent_of(const char* path, char* out) {
    const char* slash = strrchr(path, '/');
    const size_t n = slash == NULL ? 0 : (size_t)(slash - path);
    memcpy(out, path, n);
    out[n] = '\0';
}

// ---------------------------------------------------------------- entries

static void add_entry(char kind, const char* id, const char* path) {
    if (shim.count == shim.capacity) {
        shim.capacity = shim.capacity == 0 ? 256 : 2 * shim.capacity;
        shim.entries = realloc(shim.entries, shim.capacity * sizeof *shim.entries);
        if (shim.entries == NULL) die("out of memory for", "entries");
    }
    struct entry* e = &shim.entries[shim.count++];
    e->kind = kind;
    format(e->id, sizeof e->id, "%s", id);
    e->path = strdup(path);
}

static void drop_entry(size_t i) {
    free(shim.entries[i].path);
    shim.entries[i] = shim.entries[--shim.count];
}

static void save_entries(void) {
    char tmp[PATH_MAX], final[PATH_MAX];
    state_path(tmp, "entries.tmp", "");
    state_path(final, "entries", "");
    FILE* f = fopen(tmp, "w");
    if (f == NULL) die("cannot write", tmp);
    for (size_t i = 0; i < shim.count; ++i) {
        const struct entry* e = &shim.entries[i];
        fprintf(f, "%c %s %s\n", e->kind, e->kind == 'd' ? "-" : e->id, e->path);
    }
    if (fclose(f) != 0) die("cannot write", tmp);
    if (shim.rename(tmp, final) != 0) die("cannot rename", tmp);
}

static int load_entries(void) {
    char file[PATH_MAX];
    state_path(file, "entries", "");
    FILE* f = fopen(file, "r");
    if (f == NULL) return 0;
    char line[PATH_MAX + id_bytes + 8];
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char* id = strchr(line, ' ');
        char* path = id == NULL ? NULL : strchr(id + 1, ' ');
        if (path == NULL) die("damaged model in", file);
        *id++ = '\0';
        *path++ = '\0';
        add_entry(line[0], id, path);
    }
    fclose(f);
    return 1;
}

// ---------------------------------------------------------------- contents

static void inode_id(ino_t ino, char* out) { format(out, id_bytes, "%lu", (unsigned long)ino); }

// Copies the first `size` bytes of the file open as `fd` to content/<ino>.
static void save_content(int fd, ino_t ino, off_t size) {
    char source[64];
    format(source, sizeof source, "/proc/self/fd/%d", fd);
    const int in = open(source, O_RDONLY | O_CLOEXEC);  // `fd` may be write-only
    if (in < 0) die("cannot reopen", source);
    char id[id_bytes], tmp[PATH_MAX], final[PATH_MAX];
    inode_id(ino, id);
    state_path(tmp, "content/", "copy.tmp");
    state_path(final, "content/", id);
    const int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) die("cannot write", tmp);
    char buf[1 << 16];
    for (off_t at = 0; at < size;) {
        const size_t want = size - at < (off_t)sizeof buf ? (size_t)(size - at) : sizeof buf;
        const ssize_t n = pread(in, buf, want, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("cannot read", source);
        if (n == 0) break;  // cut shorter since the call began
        if (write(out, buf, (size_t)n) != n) die("cannot write", tmp);
        at += n;
    }
    close(in);
    if (close(out) != 0) die("cannot write", tmp);
    if (shim.rename(tmp, final) != 0) die("cannot rename", tmp);
}

// The inode `ino` is about to lose its last name: durable entries that name it
// keep its content under a name no later inode can take. A hard link keeps the
// content reachable under one of the two names at every moment.
static void detach(ino_t ino) {
    char id[id_bytes], from[PATH_MAX];
    inode_id(ino, id);
    state_path(from, "content/", id);
    int named = 0;
    for (size_t i = 0; i < shim.count; ++i) named |= strcmp(shim.entries[i].id, id) == 0;
    if (named) {
        char kept[id_bytes], to[PATH_MAX];
        format(kept, sizeof kept, "%s-%d-%lu", id, (int)getpid(), ++shim.detached);
        state_path(to, "content/", kept);
        if (link(from, to) != 0 && errno != ENOENT) die("cannot link", from);
        for (size_t i = 0; i < shim.count; ++i) {
            if (strcmp(shim.entries[i].id, id) == 0)
                format(shim.entries[i].id, id_bytes, "%s", kept);
        }
        save_entries();
    }
    shim.unlink(from);
}

// Before an operation takes the name `abs` away from its file; `taker` is the
// inode that will hold the name after it (a rename's source), or 0.
static void losing_name(const char* abs, ino_t taker) {
    struct stat st;
    if (relative(abs) == NULL || lstat(abs, &st) != 0) return;
    if (S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_ino != taker) detach(st.st_ino);
}

// ---------------------------------------------------------------- directories

static void save_listing(const char* abs, const char* rel) {
    for (size_t i = 0; i < shim.count;) {
        char parent[PATH_MAX];
        parent_of(shim.entries[i].path, parent);
        if (strcmp(parent, rel) == 0) {
            drop_entry(i);
        } else {
            ++i;
        }
    }
    DIR* dir = opendir(abs);
    if (dir == NULL) die("cannot list", abs);
    for (struct dirent* d; (d = readdir(dir)) != NULL;) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        char path[PATH_MAX], id[id_bytes];
        format(path, sizeof path, "%s%s%s", rel, rel[0] == '\0' ? "" : "/", d->d_name);
        if (S_ISDIR(st.st_mode)) {
            add_entry('d', "-", path);
        } else if (S_ISREG(st.st_mode)) {
            inode_id(st.st_ino, id);
            add_entry('f', id, path);
        }
    }
    closedir(dir);
    save_entries();
}

// No model yet: what is in the data directory now is durable.
static void take_everything(const char* abs, const char* rel) {
    DIR* dir = opendir(abs);
    if (dir == NULL) die("cannot list", abs);
    for (struct dirent* d; (d = readdir(dir)) != NULL;) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
        char child[PATH_MAX], path[PATH_MAX];
        format(child, sizeof child, "%s/%s", abs, d->d_name);
        format(path, sizeof path, "%s%s%s", rel, rel[0] == '\0' ? "" : "/", d->d_name);
        struct stat st;
        if (lstat(child, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            add_entry('d', "-", path);
            take_everything(child, path);
        } else if (S_ISREG(st.st_mode)) {
            char id[id_bytes];
            inode_id(st.st_ino, id);
            add_entry('f', id, path);
            const int fd = open(child, O_RDONLY | O_CLOEXEC);
            if (fd < 0) die("cannot read", child);
            save_content(fd, st.st_ino, st.st_size);
            close(fd);
        }
    }
    closedir(dir);
}

// ---------------------------------------------------------------- calls

// Concurrent syncs of one file (the WAL keeps several in flight) may finish in
// any order; the content kept is the one of the sync that began last, so a
// slow early sync never shrinks what a later one made durable.
static struct began {
    ino_t ino;
    unsigned long ticket;
} * saved_syncs;
static size_t saved_count;
static unsigned long tickets;

// Whether a sync that began with `ticket` still has news for `ino`.
static int newest_sync(ino_t ino, unsigned long ticket) {
    for (size_t i = 0; i < saved_count; ++i) {
        if (saved_syncs[i].ino != ino) continue;
        if (saved_syncs[i].ticket > ticket) return 0;
        saved_syncs[i].ticket = ticket;
        return 1;
    }
    saved_syncs = realloc(saved_syncs, (saved_count + 1) * sizeof *saved_syncs);
    if (saved_syncs == NULL) die("out of memory for", "syncs");
    saved_syncs[saved_count++] = (struct began){ino, ticket};
    return 1;
}

static int synced(int fd, int (*real)(int)) {
    const int saved = errno;
    char abs[PATH_MAX];
    if (!shim.active || !fd_path(fd, abs) || relative(abs) == NULL) {
        errno = saved;
        return real(fd);
    }
    // What the sync covers: the file as it is when the call begins.
    struct stat st;
    pthread_mutex_lock(&shim.lock);
    const unsigned long ticket = ++tickets;
    const int known = fstat(fd, &st) == 0;
    pthread_mutex_unlock(&shim.lock);
    const int rc = real(fd);
    if (rc != 0 || !known) return rc;  // a failed sync makes nothing durable
    pthread_mutex_lock(&shim.lock);
    if (S_ISDIR(st.st_mode)) {
        save_listing(abs, relative(abs));
    } else if (S_ISREG(st.st_mode) && st.st_nlink > 0 && newest_sync(st.st_ino, ticket)) {
        save_content(fd, st.st_ino, st.st_size);
    }
    pthread_mutex_unlock(&shim.lock);
    errno = saved;
    return 0;
}

int fsync(int fd) { return synced(fd, shim.fsync); }
int fdatasync(int fd) { return synced(fd, shim.fdatasync); }

// The calls that take a name from a file: the lock is held from the look at
// the file that loses the name until the call returned, so no sync records a
// listing in between.
static int take_name(int dirfd, const char* name, ino_t taker) {
    char abs[PATH_MAX];
    if (!shim.active || !resolve(dirfd, name, abs)) return 0;
    pthread_mutex_lock(&shim.lock);
    losing_name(abs, taker);
    return 1;
}

static int taken(int held, int rc) {
    if (held) pthread_mutex_unlock(&shim.lock);
    return rc;
}

// The inode a rename moves, so that renaming a file onto itself detaches nothing.
static ino_t moving(int dirfd, const char* from) {
    struct stat st;
    return fstatat(dirfd, from, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_ino : 0;
}

int unlink(const char* path) {
    const int held = take_name(AT_FDCWD, path, 0);
    return taken(held, shim.unlink(path));
}

int remove(const char* path) {
    const int held = take_name(AT_FDCWD, path, 0);
    return taken(held, shim.remove(path));
}

int unlinkat(int dirfd, const char* path, int flags) {
    const int held = take_name(dirfd, path, 0);
    return taken(held, shim.unlinkat(dirfd, path, flags));
}

int rename(const char* from, const char* to) {
    const int held = take_name(AT_FDCWD, to, moving(AT_FDCWD, from));
    return taken(held, shim.rename(from, to));
}

int renameat(int from_dir, const char* from, int to_dir, const char* to) {
    const int held = take_name(to_dir, to, moving(from_dir, from));
    return taken(held, shim.renameat(from_dir, from, to_dir, to));
}

int renameat2(int from_dir, const char* from, int to_dir, const char* to, unsigned flags) {
    const int held = take_name(to_dir, to, moving(from_dir, from));
    return taken(held, shim.renameat2(from_dir, from, to_dir, to, flags));
}

__attribute__((constructor)) static void start(void) {
    shim.fsync = dlsym(RTLD_NEXT, "fsync");
    shim.fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    shim.rename = dlsym(RTLD_NEXT, "rename");
    shim.renameat = dlsym(RTLD_NEXT, "renameat");
    shim.renameat2 = dlsym(RTLD_NEXT, "renameat2");
    shim.unlink = dlsym(RTLD_NEXT, "unlink");
    shim.unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    shim.remove = dlsym(RTLD_NEXT, "remove");
    const char* data = getenv("DSTREAM_POWERLOSS_DIR");
    const char* state = getenv("DSTREAM_POWERLOSS_STATE");
    if (data == NULL || state == NULL) return;
    if (realpath(data, shim.data) == NULL) die("cannot resolve", data);
    if (realpath(state, shim.state) == NULL) die("cannot resolve", state);
    shim.data_len = strlen(shim.data);
    char content[PATH_MAX];
    state_path(content, "content", "");
    if (mkdir(content, 0755) != 0 && errno != EEXIST) die("cannot create", content);
    if (!load_entries()) {
        take_everything(shim.data, "");
        save_entries();
    }
    shim.active = 1;
}
