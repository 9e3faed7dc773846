/* lwsconf's network interposer, preloaded into containers of mapped images
 * (lwsconf/sim/nodes/runtime/imageruntimes.py).
 *
 * Every sim pod shares the host's network stack, its pod IP one address of 127.0.0.0/8. A real pod has a network
 * namespace of its own, and on lwsconf's real nodes no route out of the cluster. Native code (a C++ rendezvous
 * store, ZeroMQ, an HTTP client in C) calls libc directly, past the Python shim (pyshim/sitecustomize.py), so this
 * library, named in LD_PRELOAD, gives such code the pod's view:
 *
 *   bind     AF_INET 0.0.0.0 -> the pod IP (LWSCONF_SIM_POD_IP); AF_INET6 :: -> ::ffff:<pod IP>, the socket made
 *            dual-stack first (the sim's pods have IPv4 only): two pods never collide on a port, and nothing
 *            listens on the machine's routable addresses.
 *   connect, sendto, sendmsg   to an address outside 127.0.0.0/8 (and ::1, ::ffff:127/104, the unspecified
 *            address) fail with ENETUNREACH, as in a pod with no route out: nothing leaves the machine, and a
 *            program asking its own address with a UDP connect to a public one (vLLM's get_ip) learns nothing
 *            about the host instead of its routable address.
 *
 * Every other call, and every bind when LWSCONF_SIM_POD_IP is unset or not an IPv4 address, is passed on unchanged.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);

static int pod_ip(struct in_addr *out) {
    const char *text = getenv("LWSCONF_SIM_POD_IP");
    return text != NULL && inet_pton(AF_INET, text, out) == 1;
}

static int loopback_v4(const struct in_addr *a) {
    uint32_t host = ntohl(a->s_addr);
    return (host >> 24) == 127 || host == INADDR_ANY;
}

/* Whether a destination is on this machine's loopback (or not an IP address at all). */
static int stays_local(const struct sockaddr *addr, socklen_t len) {
    if (addr == NULL) {
        return 1;
    }
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in v4;
        memcpy(&v4, addr, sizeof v4);
        return loopback_v4(&v4.sin_addr);
    }
    if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 v6;
        memcpy(&v6, addr, sizeof v6);
        if (IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) {
            return 1;
        }
        if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
            struct in_addr v4;
            memcpy(&v4, &v6.sin6_addr.s6_addr[12], 4);
            return loopback_v4(&v4);
        }
        return 0;
    }
    return 1; /* AF_UNIX, AF_NETLINK, AF_UNSPEC (a UDP disconnect), ... */
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real_bind;
    struct in_addr ip;
    if (real_bind == NULL) {
        real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    }
    if (addr != NULL && pod_ip(&ip)) {
        if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
            struct sockaddr_in v4;
            memcpy(&v4, addr, sizeof v4);
            if (v4.sin_addr.s_addr == htonl(INADDR_ANY)) {
                v4.sin_addr = ip;
                return real_bind(fd, (const struct sockaddr *)&v4, sizeof v4);
            }
        } else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
            struct sockaddr_in6 v6;
            memcpy(&v6, addr, sizeof v6);
            if (IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) {
                int off = 0;
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
                memset(v6.sin6_addr.s6_addr, 0, 10);
                v6.sin6_addr.s6_addr[10] = 0xff;
                v6.sin6_addr.s6_addr[11] = 0xff;
                memcpy(&v6.sin6_addr.s6_addr[12], &ip, 4);
                return real_bind(fd, (const struct sockaddr *)&v6, sizeof v6);
            }
        }
    }
    return real_bind(fd, addr, len);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static connect_fn real_connect;
    if (real_connect == NULL) {
        real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
    }
    if (!stays_local(addr, len)) {
        errno = ENETUNREACH;
        return -1;
    }
    return real_connect(fd, addr, len);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t len) {
    static sendto_fn real_sendto;
    if (real_sendto == NULL) {
        real_sendto = (sendto_fn)dlsym(RTLD_NEXT, "sendto");
    }
    if (!stays_local(addr, len)) {
        errno = ENETUNREACH;
        return -1;
    }
    return real_sendto(fd, buf, n, flags, addr, len);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    static sendmsg_fn real_sendmsg;
    if (real_sendmsg == NULL) {
        real_sendmsg = (sendmsg_fn)dlsym(RTLD_NEXT, "sendmsg");
    }
    if (msg != NULL && !stays_local((const struct sockaddr *)msg->msg_name, msg->msg_namelen)) {
        errno = ENETUNREACH;
        return -1;
    }
    return real_sendmsg(fd, msg, flags);
}
