/* srv_portowner.c — find the process listening on a TCP port through /proc; see srv_portowner.h. */
#include "srv_portowner.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TCP_LISTEN 0x0A   /* the st column of /proc/net/tcp for a listening socket */

/* The inode of a socket listening on port in one /proc/net/tcp* table, or 0. */
static unsigned long listening_inode(const char *table, int port)
{
    FILE *f = fopen(table, "r");
    if (!f) return 0;
    char line[512];
    unsigned long found = 0;
    if (!fgets(line, sizeof line, f)) { fclose(f); return 0; }   /* header */
    while (!found && fgets(line, sizeof line, f)) {
        char local[128], remote[128];
        unsigned st;
        unsigned long inode;
        /* sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, "%*s %127s %127s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode) != 4) continue;
        const char *colon = strrchr(local, ':');
        if (st == TCP_LISTEN && colon && strtol(colon + 1, NULL, 16) == port) found = inode;
    }
    fclose(f);
    return found;
}

/* The pid whose fd table holds socket:[inode], or 0. */
static int socket_owner(unsigned long inode)
{
    char want[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc) return 0;
    struct dirent *p;
    int pid = 0;
    while (!pid && (p = readdir(proc))) {
        char *end;
        long id = strtol(p->d_name, &end, 10);
        if (*end || id <= 0) continue;
        char fddir[64];
        snprintf(fddir, sizeof fddir, "/proc/%ld/fd", id);
        DIR *fds = opendir(fddir);
        if (!fds) continue;
        struct dirent *fd;
        while ((fd = readdir(fds))) {
            char path[128], target[128];
            snprintf(path, sizeof path, "%s/%.32s", fddir, fd->d_name);
            ssize_t n = readlink(path, target, sizeof target - 1);
            if (n <= 0) continue;
            target[n] = 0;
            if (!strcmp(target, want)) {
                pid = (int)id;
                break;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return pid;
}

int srv_port_owner(int port, char *out, size_t cap)
{
    unsigned long inode = listening_inode("/proc/net/tcp", port);
    if (!inode) inode = listening_inode("/proc/net/tcp6", port);
    if (!inode) return -1;
    int pid = socket_owner(inode);
    if (!pid) {
        snprintf(out, cap, "an unknown process (not readable by this user)");
        return 0;
    }
    char path[64], comm[64] = "?";
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    snprintf(out, cap, "pid %d (%s)", pid, comm);
    return pid;
}

int srv_endpoint_port(const char *endpoint)
{
    if (strncmp(endpoint, "tcp://", 6)) return -1;
    const char *colon = strrchr(endpoint, ':');
    if (!colon || colon < endpoint + 6) return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return (*end || port <= 0 || port > 65535) ? -1 : (int)port;
}
