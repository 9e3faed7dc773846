/* lwsconf's bind interposer, preloaded into containers of mapped images (lwsconf/sim/nodes/imageruntimes.py).
 *
 * Every sim pod shares the host's loopback interface, its pod IP one address of 127.0.0.0/8. Inside a real pod a
 * server binding all addresses listens in the pod's own network namespace; here it would take the port on every
 * address of the machine, so two pods would collide and the machine's routable addresses would listen. The
 * Python shim (pyshim/sitecustomize.py) rewrites such binds for Python code; native code (a C++ rendezvous store,
 * ZeroMQ) calls libc's bind directly, so this library, named in LD_PRELOAD, rewrites them the same way:
 *   AF_INET  0.0.0.0  -> the pod IP (LWSCONF_SIM_POD_IP)
 *   AF_INET6 ::       -> ::ffff:<pod IP>, the socket made dual-stack first (the sim's pods have IPv4 only)
 * Any other bind, and every bind when LWSCONF_SIM_POD_IP is unset or not an IPv4 address, is passed on unchanged.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static int pod_ip(struct in_addr *out) {
    const char *text = getenv("LWSCONF_SIM_POD_IP");
    return text != NULL && inet_pton(AF_INET, text, out) == 1;
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
