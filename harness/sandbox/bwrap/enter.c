/* The fast way into a running bubblewrap sandbox: what enter.py does, compiled by the host's C compiler
 * (entry.py builds it once into the cache), since a Python interpreter's start costs more than the
 * command. Usage: enter PID CWD CAPS root|keep FILTER -- COMMAND...
 *   CAPS: capability numbers kept in the bounding set, comma-separated; FILTER: a file holding the
 *   seccomp program (classic BPF, seccomp.py's, written by hardening); exit 252: the init is gone.
 * Everything is opened before anything is joined, and nothing of the sandbox's runs before the exec. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GONE 252
static const char *names[] = {"user", "ipc", "uts", "net", "pid", "mnt"};
static const int types[] = {CLONE_NEWUSER, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWNS};
#define COUNT 6

static int fail(const char *what) {
    fprintf(stderr, "optrunner-enter: %s: %s\n", what, strerror(errno));
    return 125;
}

int main(int argc, char **argv) {
    if (argc < 8 || strcmp(argv[6], "--") != 0) {
        fprintf(stderr, "optrunner-enter: usage: enter PID CWD CAPS root|keep FILTER -- COMMAND...\n");
        return 2;
    }
    const char *pid = argv[1], *cwd = argv[2], *caps = argv[3], *creds = argv[4], *filter_path = argv[5];
    char path[64];
    int fds[COUNT], root, joined[COUNT] = {0};
    for (int i = 0; i < COUNT; i++) {
        snprintf(path, sizeof path, "/proc/%s/ns/%s", pid, names[i]);
        if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "optrunner-enter: the sandbox's init is gone (%s)\n", strerror(errno));
            return GONE;
        }
    }
    snprintf(path, sizeof path, "/proc/%s/root", pid);
    if ((root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "optrunner-enter: the sandbox's init is gone (%s)\n", strerror(errno));
        return GONE;
    }
    static struct sock_filter program[512];
    int filter = open(filter_path, O_RDONLY | O_CLOEXEC);
    ssize_t size = filter < 0 ? -1 : read(filter, program, sizeof program);
    if (size <= 0 || size % sizeof(struct sock_filter) != 0)
        return fail("reading the seccomp program");
    close(filter);
    /* Two passes, as nsenter: what the caller may join as itself first (root: all but the user
     * namespace, the host's own network among them when the sandbox shares it), then the rest. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = pass ? 0 : 1; i < COUNT; i++) {
            if (joined[i])
                continue;
            if (setns(fds[i], types[i]) == 0)
                joined[i] = 1;
            else if (pass)
                return fail("joining a namespace");
        }
    for (int i = 0; i < COUNT; i++)
        close(fds[i]);
    if (fchdir(root) != 0 || chroot(".") != 0)
        return fail("taking the sandbox's root");
    close(root);
    if (strcmp(creds, "root") == 0 && (setgroups(0, NULL) != 0 || setgid(0) != 0 || setuid(0) != 0))
        return fail("becoming the sandbox's root");
    unsigned long long keep = 0;
    for (char *next = (char *)caps; *next;) {
        keep |= 1ULL << strtoul(next, &next, 10);
        if (*next == ',')
            next++;
    }
    for (int cap = 0; cap <= 63 && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
        if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
            return fail("dropping a capability");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return fail("setting no_new_privs");
    struct sock_fprog fprog = {(unsigned short)(size / sizeof(struct sock_filter)), program};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0)
        return fail("loading seccomp");
    if (chdir(cwd) != 0) {
        fprintf(stderr, "optrunner-enter: cannot change directory to %s: %s\n", cwd, strerror(errno));
        return 126;
    }
    pid_t child = fork();
    if (child < 0)
        return fail("fork");
    if (child == 0) {
        execvp(argv[7], argv + 7);
        fprintf(stderr, "optrunner-enter: %s: %s\n", argv[7], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR)
            return fail("waiting");
    if (WIFSIGNALED(status)) { /* die as it died, so the caller sees the same signal */
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}
