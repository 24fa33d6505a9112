/* How root starts a bubblewrap sandbox whose ids are not the host's: what launch.py does, compiled by the
 * host's C compiler (hardening builds it once). Usage: launch VIEWS BASE COUNT SPEC... -- COMMAND...
 *   VIEWS: an empty folder; SPEC: i:PATH, p:PATH or r:PATH, each shown read-only at VIEWS/<its index>, i:
 *   through an idmapped mount (the host's ids 0.. seen as BASE..: a folder the host made is the sandbox
 *   root's), p: as it is (made by a sandbox: its ids are in the range already), r: as it is with the
 *   mounts under it. i: and p: views are overlay layers: without the mounts under PATH, which the user
 *   namespace would lock and overlayfs then refuses as a lower layer ("failed to clone lowerpath": the
 *   GPU host's driver folder under /usr); the sandbox binds those on top (r:).
 * It takes a mount namespace of its own (the views live there, and go with the sandbox), then a user
 * namespace whose ids 0..COUNT-1 are the host's BASE.., mapped by a child still root on the host; it
 * becomes that namespace's root and execs COMMAND (bwrap, which makes the sandbox's other namespaces).
 * Exit 125 and one line on stderr when a step fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* (the new mount API's numbers are one table on every architecture) */
#define SYS_OPEN_TREE 428
#define SYS_MOVE_MOUNT 429
#define SYS_MOUNT_SETATTR 442
#define CLONE_TREE 1             /* OPEN_TREE_CLONE */
#define EMPTY_PATH 0x1000        /* AT_EMPTY_PATH */
#define RECURSIVE 0x8000         /* AT_RECURSIVE */
#define ATTR_RDONLY 0x1          /* MOUNT_ATTR_RDONLY */
#define ATTR_IDMAP 0x100000      /* MOUNT_ATTR_IDMAP */
#define MOVE_FROM_EMPTY 0x4      /* MOVE_MOUNT_F_EMPTY_PATH */

struct attr { uint64_t set, clr, propagation, userns_fd; };

static int fail(const char *what, const char *detail) {
    fprintf(stderr, "optrunner-launch: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "", strerror(errno));
    return 125;
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t done = write(fd, text, strlen(text));
    close(fd);
    return done == (ssize_t)strlen(text) ? 0 : -1;
}

/* The child: root on the host still, in the parent's mount namespace. */
static int map_and_show(pid_t parent, const char *views, const char *base, const char *count,
                        char **specs, int nspecs) {
    char path[4096], map[128];
    snprintf(map, sizeof map, "0 %s %s\n", base, count);
    snprintf(path, sizeof path, "/proc/%d/uid_map", parent);
    if (write_file(path, map) != 0)
        return fail("mapping the user ids", NULL);
    snprintf(path, sizeof path, "/proc/%d/gid_map", parent);
    if (write_file(path, map) != 0)
        return fail("mapping the group ids", NULL);
    snprintf(path, sizeof path, "/proc/%d/ns/user", parent);
    int userns = open(path, O_RDONLY | O_CLOEXEC);
    if (userns < 0)
        return fail("opening the user namespace", NULL);
    for (int n = 0; n < nspecs; n++) {
        const char *source = specs[n] + 2;
        snprintf(path, sizeof path, "%s/%d", views, n);
        struct stat seen;
        int made = 0;
        if (stat(source, &seen) == 0 && !S_ISDIR(seen.st_mode)) {  /* (a file bound alone: a file to mount on) */
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            made = fd < 0 ? -1 : close(fd);
        } else {
            made = mkdir(path, 0755);
        }
        if (made != 0)
            return fail("making", path);
        int deep = specs[n][0] == 'r' ? RECURSIVE : 0;
        int tree = (int)syscall(SYS_OPEN_TREE, AT_FDCWD, source, CLONE_TREE | O_CLOEXEC | deep);
        if (tree < 0)
            return fail("opening", source);
        struct attr attr = {ATTR_RDONLY, 0, 0, 0};
        if (specs[n][0] == 'i') {
            attr.set |= ATTR_IDMAP;
            attr.userns_fd = (uint64_t)userns;
        }
        if (syscall(SYS_MOUNT_SETATTR, tree, "", EMPTY_PATH | deep, &attr, sizeof attr) != 0)
            return fail(specs[n][0] == 'i' ? "an idmapped view of (the file system may not support them)"
                                           : "a read-only view of", source);
        if (syscall(SYS_MOVE_MOUNT, tree, "", AT_FDCWD, path, MOVE_FROM_EMPTY) != 0)
            return fail("showing", source);
        close(tree);
    }
    return 0;
}

int main(int argc, char **argv) {
    int dash = 4;
    while (dash < argc && strcmp(argv[dash], "--") != 0)
        dash++;
    if (argc < 5 || dash + 1 >= argc) {
        fprintf(stderr, "optrunner-launch: usage: launch VIEWS BASE COUNT SPEC... -- COMMAND...\n");
        return 2;
    }
    const char *views = argv[1], *base = argv[2], *count = argv[3];
    for (int n = 4; n < dash; n++)
        if (!strchr("ipr", argv[n][0]) || argv[n][1] != ':') {
            fprintf(stderr, "optrunner-launch: a view is i:PATH, p:PATH or r:PATH, not %s\n", argv[n]);
            return 2;
        }
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return fail("taking a mount namespace", NULL);
    if (mount("tmpfs", views, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
        return fail("mounting the views at", views);
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0)
        return fail("pipe", NULL);
    pid_t parent = getpid(), child = fork();
    if (child < 0)
        return fail("fork", NULL);
    if (child == 0) {
        char byte;
        close(go[1]);
        if (read(go[0], &byte, 1) != 1)
            _exit(125);
        _exit(map_and_show(parent, views, base, count, argv + 4, dash - 4));
    }
    close(go[0]);
    int unshared = unshare(CLONE_NEWUSER);
    int saved = errno;
    if (write(go[1], "1", 1) != 1 && unshared == 0)
        return fail("starting the mapper", NULL);
    close(go[1]);
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR)
            return fail("waiting for the mapper", NULL);
    errno = saved;
    if (unshared != 0)
        return fail("taking a user namespace", NULL);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 125; /* (the mapper said why) */
    if (setresgid(0, 0, 0) != 0 || setgroups(0, NULL) != 0 || setresuid(0, 0, 0) != 0)
        return fail("becoming the namespace's root", NULL);
    execvp(argv[dash + 1], argv + dash + 1);
    return fail("running", argv[dash + 1]);
}
