/*
 * pinet-udpgen - UDP packet-rate generator (sendto / sendmmsg / raw L2 frames)
 *
 * Build: cc -O2 -Wall -Wextra -Werror -pthread -o pinet-udpgen pinet-udpgen.c
 *
 * Platforms (one small #if block each, look for PLATFORM below):
 *   Linux    raw = AF_PACKET SOCK_RAW; SO_BINDTODEVICE; IP_RECVERR; /proc/stat
 *   FreeBSD  raw = BPF (/dev/bpf, BIOCSETIF + BIOCSHDRCMPLT, write() frames);
 *            sendmmsg (libc, 11.0+); cpuset_t pinning; kern.cp_time
 *   NetBSD   raw = BPF as above; sendmmsg (syscall, 7.0+); cpuset_create()
 *            pinning (needs root unless
 *            security.models.extensions.user_set_cpu_affinity=1); kern.cp_time
 *
 * Output: JSON Lines on stdout (start / interval / end / error events).
 * Exit codes: 0 ok, 1 fatal runtime error, 2 bad usage.
 */
#define _GNU_SOURCE /* Linux: sendmmsg, CPU_SET, pthread_setaffinity_np; ignored by FreeBSD,
                     * harmless on NetBSD (does not switch off _NETBSD_SOURCE) */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ---------- PLATFORM: headers and feature switches ---------- */
#if defined(__linux__)
#include <linux/if_packet.h> /* AF_PACKET raw socket, struct sockaddr_ll */
#include <net/ethernet.h>    /* ETH_P_IP */
#include <net/if_arp.h>      /* ARPHRD_ETHER */
#include <sched.h>           /* cpu_set_t */
#define RAW_BPF 0
#define HAVE_SENDMMSG 1      /* glibc 2.14+, musl */
#define HAVE_BINDTODEVICE 1
#define HAVE_RECVERR 1
#define RAW_DESC "raw (AF_PACKET SOCK_RAW, Ethernet+IPv4+UDP built here)"
#define IF_DESC "egress interface (required for raw; SO_BINDTODEVICE otherwise)"
#elif defined(__FreeBSD__) || defined(__NetBSD__)
#include <sys/param.h>       /* __FreeBSD_version / __NetBSD_Version__ */
#include <sys/sockio.h>      /* SIOCGIFMTU */
#include <sys/sysctl.h>      /* sysctlbyname("kern.cp_time") */
#include <fcntl.h>
#include <ifaddrs.h>         /* getifaddrs: AF_LINK entries carry the MAC */
#include <net/bpf.h>         /* BIOCSETIF, BIOCSHDRCMPLT, BIOCGDLT, BIOCSETF */
#include <net/if_dl.h>       /* struct sockaddr_dl, LLADDR */
#if defined(__FreeBSD__)
#include <pthread_np.h>      /* pthread_setaffinity_np */
#include <sys/cpuset.h>      /* cpuset_t, CPU_ZERO, CPU_SET */
typedef long cp_time_t;      /* kern.cp_time is long[CPUSTATES] (sys/resource.h) */
#define HAVE_SENDMMSG (__FreeBSD_version >= 1100000) /* libc loop over sendmsg */
#else
#include <sched.h>           /* cpuset_t, cpuset_create/cpuset_set (sys/sched.h) */
typedef uint64_t cp_time_t;  /* kern.cp_time is uint64_t[CPUSTATES] (sys/sched.h) */
#define HAVE_SENDMMSG (__NetBSD_Version__ >= 700000000) /* real syscall */
#endif
#define RAW_BPF 1
#define HAVE_BINDTODEVICE 0
#define HAVE_RECVERR 0
#define RAW_DESC "raw (BPF /dev/bpf write(), Ethernet+IPv4+UDP built here)"
#define IF_DESC "egress interface (required for raw; other modes: use --src)"
#else
#error "pinet-udpgen supports Linux, FreeBSD and NetBSD only"
#endif

#define PROG "pinet-udpgen"
#define JSON_VERSION 1
#define MAX_THREADS 64
#define MAX_PAYLOAD 8972 /* 9000 (jumbo MTU) - 20 (IPv4) - 8 (UDP) */
#define MAX_BATCH 1024
#define HDR_LEN (14 + 20 + 8)
#define POLL_NS 250000000L /* main thread samples counters at least every 250 ms */

/* Counters are native-word atomics (lock-free on every Linux/BSD target incl.
 * 32-bit ARM). Each is written by exactly one worker; the main thread polls
 * often enough that modular (wrapping) deltas are always exact. */
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2, "need lock-free atomic long");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "need lock-free atomic int");

enum mode { MODE_SENDTO, MODE_SENDMMSG, MODE_RAW };
static const char *const mode_names[] = { "sendto", "sendmmsg", "raw" };

struct counters {
    alignas(64) atomic_ulong packets; /* own cache line per thread */
    atomic_ulong enobufs;
    atomic_ulong eagain;
    atomic_ulong errors;
};

struct snap { unsigned long packets, enobufs, eagain, errors; };
struct totals { uint64_t packets, enobufs, eagain, errors; };

struct worker {
    pthread_t tid;
    bool running;
    int idx;
    int fd;
    enum mode mode;
    unsigned char *buf; /* datagram payload or full L2 frame */
    size_t len;
    const struct sockaddr *addr;
    socklen_t alen;
    unsigned batch;
#if HAVE_SENDMMSG
    struct mmsghdr *msgs;
#endif
    struct iovec iov;
    struct counters *c;
};

static struct counters g_ctr[MAX_THREADS];
static struct worker g_w[MAX_THREADS];
static atomic_int g_stop;
static volatile sig_atomic_t g_signal;

/* ---------- options ---------- */
struct opts {
    enum mode mode;
    bool mode_set;
    struct in_addr dest, src;
    bool dest_set, src_set;
    char dest_str[INET_ADDRSTRLEN], src_str[INET_ADDRSTRLEN];
    unsigned port;
    char ifname[IFNAMSIZ];
    bool if_set;
    unsigned char dmac[6];
    bool dmac_set;
    unsigned threads;
    unsigned payload;
    double duration;
    bool duration_set;
    double interval;
    unsigned batch;
    bool batch_set;
    bool no_recverr;
    bool pin;
};

/* The hash of this source the binary was built from (build_argv passes it): pinet checks it
 * with --version before it runs a binary a lab built for its board (a QNX one, cross-compiled). */
#ifndef PINET_UDPGEN_SOURCE
#define PINET_UDPGEN_SOURCE "unknown"
#endif

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: " PROG " --mode sendto|sendmmsg|raw --dest IPV4 --duration SEC [options]\n"
        "  --mode MODE        sendto (one syscall per datagram), sendmmsg (batched),\n"
        "                     " RAW_DESC "\n"
        "  --dest IPV4        destination address (required)\n"
        "  --port N           destination UDP port, 1..65535 (default 9)\n"
        "  --interface IF     " IF_DESC "\n"
        "  --dest-mac MAC     destination MAC aa:bb:cc:dd:ee:ff (required for raw)\n"
        "  --src IPV4         source IPv4 (required for raw; bind() address otherwise)\n"
        "  --threads N        sender threads, each with its own socket, 1..64 (default 1)\n"
        "  --payload BYTES    UDP payload size, 1..8972 (default 1472)\n"
        "  --duration SEC     run time in seconds, float > 0 (required)\n"
        "  --interval SEC     report interval, float 0.01..86400 (default 1.0)\n"
        "  --batch N          sendmmsg batch size, 1..1024 (default 64)\n"
#if HAVE_RECVERR
        "  --no-recverr       UDP modes: do not set IP_RECVERR (then the kernel hides\n"
        "                     ENOBUFS/qdisc drops and ICMP errors from the sender)\n"
#else
        "  --no-recverr       accepted, no effect on this OS (send() reports ENOBUFS itself)\n"
#endif
        "  --pin              pin sender thread i to online CPU i mod N (default: no pinning)\n"
        "  --version          print the source hash this binary was built from\n"
        "  --help             show this help\n"
        "Output is JSON Lines on stdout; exit 0 ok, 1 runtime error, 2 bad usage.\n");
}

static void __attribute__((noreturn, format(printf, 1, 2))) die_usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, PROG ": error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '" PROG " --help' for usage.\n");
    exit(2);
}

/* JSON string body escaping for error messages (strerror text etc.). */
static void json_str(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
}

static void __attribute__((noreturn, format(printf, 1, 2))) die_fatal(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fputs("{\"event\":\"error\",\"message\":\"", stdout);
    json_str(stdout, msg);
    fputs("\"}\n", stdout);
    fflush(stdout);
    fprintf(stderr, PROG ": fatal: %s\n", msg);
    exit(1);
}

static long parse_long(const char *name, const char *s, long lo, long hi)
{
    char *end;
    long v;
    if (!s || !*s || isspace((unsigned char)*s))
        die_usage("--%s: expected an integer, got '%s'", name, s ? s : "");
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != '\0')
        die_usage("--%s: '%s' is not a valid integer", name, s);
    if (v < lo || v > hi)
        die_usage("--%s: %ld out of range (%ld..%ld)", name, v, lo, hi);
    return v;
}

static double parse_double(const char *name, const char *s, double lo, double hi, bool lo_excl)
{
    char *end;
    double v;
    if (!s || !*s || isspace((unsigned char)*s))
        die_usage("--%s: expected a number, got '%s'", name, s ? s : "");
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end != '\0' || !isfinite(v))
        die_usage("--%s: '%s' is not a valid finite number", name, s);
    if ((lo_excl ? v <= lo : v < lo) || v > hi)
        die_usage("--%s: %.10g out of range (%s%.10g .. %.10g)", name, v, lo_excl ? "> " : "", lo, hi);
    return v;
}

static void parse_ipv4(const char *name, const char *s, struct in_addr *a, char *out)
{
    if (strlen(s) > 15 || inet_pton(AF_INET, s, a) != 1)
        die_usage("--%s: '%s' is not a dotted-quad IPv4 address", name, s);
    /* print only the normalised form: safe for JSON */
    if (!inet_ntop(AF_INET, a, out, INET_ADDRSTRLEN))
        die_usage("--%s: cannot format address", name);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static void parse_mac(const char *s, unsigned char mac[6])
{
    const char *p = s;
    unsigned char any = 0;
    for (int i = 0; i < 6; i++) {
        int h = hexval((unsigned char)p[0]);
        int l = h < 0 ? -1 : hexval((unsigned char)p[1]);
        if (h < 0 || l < 0)
            goto bad;
        mac[i] = (unsigned char)(h << 4 | l);
        any |= mac[i];
        p += 2;
        if (i < 5) {
            if (*p != ':')
                goto bad;
            p++;
        }
    }
    if (*p != '\0')
        goto bad;
    if (!any)
        die_usage("--dest-mac: all-zero MAC address is not usable");
    return;
bad:
    die_usage("--dest-mac: '%s' is not a MAC address of the form aa:bb:cc:dd:ee:ff", s);
}

static void parse_ifname(const char *s, char *out)
{
    size_t n = strlen(s);
    if (n < 1 || n > 15)
        die_usage("--interface: name must be 1..15 characters, got %zu", n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '_' || c == '.' || c == ':' || c == '@' || c == '-') || c > 0x7f)
            die_usage("--interface: invalid character in '%s' (allowed: A-Z a-z 0-9 _ . : @ -)", s);
    }
    memcpy(out, s, n + 1);
}

enum { O_MODE = 256, O_DEST, O_PORT, O_IF, O_DMAC, O_SRC, O_THREADS, O_PAYLOAD,
       O_DURATION, O_INTERVAL, O_BATCH, O_NORECVERR, O_PIN, O_HELP, O_VERSION };

static const struct option longopts[] = {
    { "mode", required_argument, NULL, O_MODE },
    { "dest", required_argument, NULL, O_DEST },
    { "port", required_argument, NULL, O_PORT },
    { "interface", required_argument, NULL, O_IF },
    { "dest-mac", required_argument, NULL, O_DMAC },
    { "src", required_argument, NULL, O_SRC },
    { "threads", required_argument, NULL, O_THREADS },
    { "payload", required_argument, NULL, O_PAYLOAD },
    { "duration", required_argument, NULL, O_DURATION },
    { "interval", required_argument, NULL, O_INTERVAL },
    { "batch", required_argument, NULL, O_BATCH },
    { "no-recverr", no_argument, NULL, O_NORECVERR },
    { "pin", no_argument, NULL, O_PIN },
    { "help", no_argument, NULL, O_HELP },
    { "version", no_argument, NULL, O_VERSION },
    { NULL, 0, NULL, 0 }
};

static const char *optname(int val)
{
    for (const struct option *o = longopts; o->name; o++)
        if (o->val == val)
            return o->name;
    return "?";
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->port = 9;
    o->threads = 1;
    o->payload = 1472;
    o->interval = 1.0;
    o->batch = 64;

    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":h", longopts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case O_MODE:
            if (!strcmp(optarg, "sendto")) o->mode = MODE_SENDTO;
            else if (!strcmp(optarg, "sendmmsg")) o->mode = MODE_SENDMMSG;
            else if (!strcmp(optarg, "raw")) o->mode = MODE_RAW;
            else die_usage("--mode: unknown mode '%s' (expected sendto, sendmmsg or raw)", optarg);
            o->mode_set = true;
            break;
        case O_DEST: parse_ipv4("dest", optarg, &o->dest, o->dest_str); o->dest_set = true; break;
        case O_SRC: parse_ipv4("src", optarg, &o->src, o->src_str); o->src_set = true; break;
        case O_PORT: o->port = (unsigned)parse_long("port", optarg, 1, 65535); break;
        case O_IF: parse_ifname(optarg, o->ifname); o->if_set = true; break;
        case O_DMAC: parse_mac(optarg, o->dmac); o->dmac_set = true; break;
        case O_THREADS: o->threads = (unsigned)parse_long("threads", optarg, 1, MAX_THREADS); break;
        case O_PAYLOAD: o->payload = (unsigned)parse_long("payload", optarg, 1, MAX_PAYLOAD); break;
        case O_DURATION:
            o->duration = parse_double("duration", optarg, 0.0, 31536000.0, true);
            o->duration_set = true;
            break;
        case O_INTERVAL: o->interval = parse_double("interval", optarg, 0.01, 86400.0, false); break;
        case O_BATCH:
            o->batch = (unsigned)parse_long("batch", optarg, 1, MAX_BATCH);
            o->batch_set = true;
            break;
        case O_NORECVERR: o->no_recverr = true; break;
        case O_PIN: o->pin = true; break;
        case 'h': case O_HELP: usage(stdout); exit(0);
        case O_VERSION: printf(PROG " %s\n", PINET_UDPGEN_SOURCE); exit(0);
        case ':':
            die_usage("option '--%s' requires an argument", optname(optopt));
        default:
            if (optopt && optopt < 256)
                die_usage("unknown option '-%c'", optopt);
            die_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die_usage("unexpected argument '%s'", argv[optind]);
    if (!o->mode_set)
        die_usage("--mode is required (sendto, sendmmsg or raw)");
#if !HAVE_SENDMMSG
    if (o->mode == MODE_SENDMMSG)
        die_usage("--mode sendmmsg: sendmmsg() is not available on this OS version (use sendto)");
#endif
    if (!o->dest_set)
        die_usage("--dest is required");
    if (o->dest.s_addr == htonl(INADDR_ANY))
        die_usage("--dest: 0.0.0.0 is not a valid destination");
    if (!o->duration_set)
        die_usage("--duration is required");
    if (o->mode == MODE_RAW) {
        if (!o->if_set) die_usage("--mode raw requires --interface");
        if (!o->dmac_set) die_usage("--mode raw requires --dest-mac");
        if (!o->src_set) die_usage("--mode raw requires --src");
    } else if (o->dmac_set) {
        fprintf(stderr, PROG ": warning: --dest-mac is ignored unless --mode raw\n");
    }
#if !HAVE_BINDTODEVICE
    if (o->if_set && o->mode != MODE_RAW)
        die_usage("--interface with --mode %s needs SO_BINDTODEVICE, which this OS lacks; "
                  "pick the egress path with --src (and the routing table)", mode_names[o->mode]);
#endif
    if (o->no_recverr && o->mode == MODE_RAW)
        fprintf(stderr, PROG ": warning: --no-recverr has no effect with --mode raw\n");
    if (o->batch_set && o->mode != MODE_SENDMMSG)
        fprintf(stderr, PROG ": warning: --batch only applies to --mode sendmmsg\n");
}

/* ---------- helpers ---------- */
static double ts_sec(const struct timespec *t) { return (double)t->tv_sec + t->tv_nsec / 1e9; }

static struct timespec mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

/* sec >= 0 everywhere (durations, intervals, poll period): truncation == floor(),
 * so no libm is needed (FreeBSD/NetBSD cc does not link -lm implicitly). */
static struct timespec ts_add(struct timespec t, double sec)
{
    double whole = (double)(time_t)sec;
    t.tv_sec += (time_t)whole;
    t.tv_nsec += (long)((sec - whole) * 1e9);
    while (t.tv_nsec >= 1000000000L) { t.tv_nsec -= 1000000000L; t.tv_sec++; }
    return t;
}

static int ts_cmp(const struct timespec *a, const struct timespec *b)
{
    if (a->tv_sec != b->tv_sec) return a->tv_sec < b->tv_sec ? -1 : 1;
    if (a->tv_nsec != b->tv_nsec) return a->tv_nsec < b->tv_nsec ? -1 : 1;
    return 0;
}

static void cpu_self(double *user, double *sys)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) { *user = *sys = 0; return; }
    *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct cpustat { unsigned long long total, idle; bool ok; };

#if defined(__linux__)
static struct cpustat read_proc_stat(void)
{
    struct cpustat cs = { 0, 0, false };
    unsigned long long v[8] = { 0 };
    char line[512];
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return cs;
    if (fgets(line, sizeof line, f) &&
        sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) >= 4) {
        /* user nice system idle iowait irq softirq steal (guest is inside user) */
        for (int i = 0; i < 8; i++) cs.total += v[i];
        cs.idle = v[3] + v[4];
        cs.ok = true;
    }
    fclose(f);
    return cs;
}
#else
/* BSD: system-wide tick counters user nice sys intr idle (CP_* indices) */
static struct cpustat read_proc_stat(void)
{
    struct cpustat cs = { 0, 0, false };
    cp_time_t v[CPUSTATES];
    size_t len = sizeof v;
    if (sysctlbyname("kern.cp_time", v, &len, NULL, 0) != 0 || len != sizeof v)
        return cs;
    for (int i = 0; i < CPUSTATES; i++) cs.total += (unsigned long long)v[i];
    cs.idle = (unsigned long long)v[CP_IDLE];
    cs.ok = true;
    return cs;
}
#endif

static void print_busy(const struct cpustat *a, const struct cpustat *b)
{
    if (a->ok && b->ok && b->total > a->total && b->idle >= a->idle) {
        double dt = (double)(b->total - a->total), di = (double)(b->idle - a->idle);
        double pct = 100.0 * (1.0 - di / dt);
        if (pct < 0) pct = 0;
        if (pct > 100) pct = 100;
        printf("%.2f", pct);
    } else {
        printf("null");
    }
}

static uint16_t ip_checksum(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        sum += (uint32_t)p[len - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum; /* host order of the big-endian sum */
}

/* ---------- workers ---------- */
static void count_error(struct worker *w, int e, unsigned long *nb, unsigned long *ag,
                        unsigned long *er, bool *warned)
{
    if (e == EINTR)
        return;
    if (e == ENOBUFS) {
        atomic_store_explicit(&w->c->enobufs, ++*nb, memory_order_relaxed);
    } else if (e == EAGAIN || e == EWOULDBLOCK) {
        atomic_store_explicit(&w->c->eagain, ++*ag, memory_order_relaxed);
    } else {
        atomic_store_explicit(&w->c->errors, ++*er, memory_order_relaxed);
        if (!*warned) {
            *warned = true;
            fprintf(stderr, PROG ": warning: thread %d: send error: %s (further errors only counted)\n",
                    w->idx, strerror(e));
        }
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned long pk = 0, nb = 0, ag = 0, er = 0;
    bool warned = false;

#if HAVE_SENDMMSG
    if (w->mode == MODE_SENDMMSG) {
        while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
            /* int on Linux/NetBSD, ssize_t on FreeBSD; r <= batch <= 1024 */
            int r = (int)sendmmsg(w->fd, w->msgs, w->batch, 0);
            if (r > 0) {
                pk += (unsigned long)r;
                atomic_store_explicit(&w->c->packets, pk, memory_order_relaxed);
            } else if (r < 0) {
                count_error(w, errno, &nb, &ag, &er, &warned);
            }
        }
    } else
#endif
#if RAW_BPF
    if (w->mode == MODE_RAW) {
        /* BPF: one write() = one complete Ethernet frame */
        while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
            ssize_t r = write(w->fd, w->buf, w->len);
            if (r >= 0)
                atomic_store_explicit(&w->c->packets, ++pk, memory_order_relaxed);
            else
                count_error(w, errno, &nb, &ag, &er, &warned);
        }
    } else
#endif
    {
        while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
            ssize_t r = sendto(w->fd, w->buf, w->len, 0, w->addr, w->alen);
            if (r >= 0)
                atomic_store_explicit(&w->c->packets, ++pk, memory_order_relaxed);
            else
                count_error(w, errno, &nb, &ag, &er, &warned);
        }
    }
    return NULL;
}

/* ---------- counter sampling ---------- */
static struct snap g_prev[MAX_THREADS];

static void collect(unsigned n, struct totals *t)
{
    for (unsigned i = 0; i < n; i++) {
        struct snap s;
        s.packets = atomic_load_explicit(&g_ctr[i].packets, memory_order_relaxed);
        s.enobufs = atomic_load_explicit(&g_ctr[i].enobufs, memory_order_relaxed);
        s.eagain = atomic_load_explicit(&g_ctr[i].eagain, memory_order_relaxed);
        s.errors = atomic_load_explicit(&g_ctr[i].errors, memory_order_relaxed);
        /* unsigned long arithmetic wraps correctly */
        t->packets += s.packets - g_prev[i].packets;
        t->enobufs += s.enobufs - g_prev[i].enobufs;
        t->eagain += s.eagain - g_prev[i].eagain;
        t->errors += s.errors - g_prev[i].errors;
        g_prev[i] = s;
    }
}

static void on_signal(int sig) { g_signal = sig; }

static void stop_workers(unsigned n)
{
    atomic_store(&g_stop, 1);
    for (unsigned i = 0; i < n; i++)
        if (g_w[i].running) {
            pthread_join(g_w[i].tid, NULL);
            g_w[i].running = false;
        }
}

/* ---------- PLATFORM: thread pinning (--pin) ---------- */
static int pin_thread(pthread_t t, unsigned cpu) /* 0 or an errno value */
{
#if defined(__linux__) || defined(__FreeBSD__)
    /* Linux: cpu_set_t (<sched.h>); FreeBSD: cpuset_t (<sys/cpuset.h>) */
#if defined(__linux__)
    cpu_set_t set;
#else
    cpuset_t set;
#endif
    if (cpu >= CPU_SETSIZE)
        return EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(t, sizeof set, &set);
#else
    /* NetBSD: opaque, dynamically sized cpuset_t */
    cpuset_t *set = cpuset_create();
    int e;
    if (!set)
        return ENOMEM;
    cpuset_zero(set);
    e = cpuset_set((cpuid_t)cpu, set) == 0 ? pthread_setaffinity_np(t, cpuset_size(set), set) : EINVAL;
    cpuset_destroy(set);
    return e;
#endif
}

/* ---------- setup ---------- */
static int open_udp_socket(const struct opts *o)
{
    int one = 1;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die_fatal("socket(AF_INET, SOCK_DGRAM) failed: %s", strerror(errno));
    /* Report qdisc drops (ENOBUFS) to the caller instead of letting the kernel
     * count them silently in Udp SndbufErrors. Side effect: ICMP errors
     * (e.g. port unreachable -> ECONNREFUSED) are reported on the next send. */
#if HAVE_RECVERR
    if (!o->no_recverr && setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one) != 0)
        die_fatal("setsockopt(IP_RECVERR) failed: %s", strerror(errno));
#endif
    setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
#if HAVE_BINDTODEVICE
    if (o->if_set &&
        setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, o->ifname, (socklen_t)strlen(o->ifname)) != 0)
        die_fatal("SO_BINDTODEVICE to interface '%s' failed: %s%s", o->ifname, strerror(errno),
                  errno == EPERM ? " (needs CAP_NET_RAW)" : "");
#endif
    if (o->src_set) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = o->src, .sin_port = 0 };
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
            die_fatal("bind to source %s failed: %s", o->src_str, strerror(errno));
    }
    return fd;
}

struct rawinfo { int ifindex; unsigned char smac[6]; int mtu; };

#if !RAW_BPF
static int open_raw_socket(const struct opts *o, struct rawinfo *ri)
{
    struct ifreq ifr;
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* proto 0: send only */
    if (fd < 0)
        die_fatal("socket(AF_PACKET, SOCK_RAW) failed: %s%s", strerror(errno),
                  (errno == EPERM || errno == EACCES) ? " (raw mode needs root or CAP_NET_RAW)" : "");
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, o->ifname, strlen(o->ifname) + 1);
    if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0)
        die_fatal("interface '%s': %s", o->ifname,
                  errno == ENODEV ? "no such interface" : strerror(errno));
    ri->ifindex = ifr.ifr_ifindex;
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0)
        die_fatal("SIOCGIFHWADDR on '%s' failed: %s", o->ifname, strerror(errno));
    if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
        die_fatal("interface '%s' is not an Ethernet interface (hw type %d)", o->ifname,
                  ifr.ifr_hwaddr.sa_family);
    memcpy(ri->smac, ifr.ifr_hwaddr.sa_data, 6);
    if (ioctl(fd, SIOCGIFMTU, &ifr) != 0)
        die_fatal("SIOCGIFMTU on '%s' failed: %s", o->ifname, strerror(errno));
    ri->mtu = ifr.ifr_mtu;
    struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = ri->ifindex, .sll_protocol = 0 };
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0)
        die_fatal("bind AF_PACKET socket to '%s' failed: %s", o->ifname, strerror(errno));
    return fd;
}
#else
/* BSD: interface index and MAC from the AF_LINK entry of getifaddrs(), MTU via
 * SIOCGIFMTU, then a BPF descriptor bound to the interface for write()ing frames.
 * Same name and contract as the Linux AF_PACKET version. */
static int open_raw_socket(const struct opts *o, struct rawinfo *ri)
{
    struct ifaddrs *ifa0, *ifa;
    struct ifreq ifr;
    bool found = false;
    int fd = -1, e;

    if (getifaddrs(&ifa0) != 0)
        die_fatal("getifaddrs failed: %s", strerror(errno));
    for (ifa = ifa0; ifa; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_LINK || strcmp(ifa->ifa_name, o->ifname))
            continue;
        const struct sockaddr_dl *sdl = (const struct sockaddr_dl *)(const void *)ifa->ifa_addr;
        if (sdl->sdl_alen != 6) {
            freeifaddrs(ifa0);
            die_fatal("interface '%s' is not an Ethernet interface (link address length %d)", o->ifname,
                      sdl->sdl_alen);
        }
        ri->ifindex = sdl->sdl_index;
        memcpy(ri->smac, LLADDR(sdl), 6);
        found = true;
        break;
    }
    freeifaddrs(ifa0);
    if (!found)
        die_fatal("interface '%s': no such interface", o->ifname);

    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, o->ifname, strlen(o->ifname) + 1);
    int sfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sfd < 0 || ioctl(sfd, SIOCGIFMTU, &ifr) != 0)
        die_fatal("SIOCGIFMTU on '%s' failed: %s", o->ifname, strerror(errno));
    ri->mtu = ifr.ifr_mtu;
    close(sfd);

    /* /dev/bpf clones a free unit on FreeBSD and NetBSD; fall back to numbered units.
     * Write-only: FreeBSD then never attaches us as a reader (no capture cost). */
    fd = open("/dev/bpf", O_WRONLY | O_CLOEXEC);
    e = errno;
    for (int u = 0; fd < 0 && (e == ENOENT || e == EBUSY) && u < 256; u++) {
        char dev[32];
        snprintf(dev, sizeof dev, "/dev/bpf%d", u);
        fd = open(dev, O_WRONLY | O_CLOEXEC);
        if (fd < 0 && errno != EBUSY) { /* ENOENT: no more units; keep the first real error */
            if (errno != ENOENT) e = errno;
            break;
        }
    }
    if (fd < 0)
        die_fatal("cannot open a BPF device (/dev/bpf, /dev/bpfN): %s%s", strerror(e),
                  (e == EPERM || e == EACCES) ? " (raw mode needs root)" : "");

    if (ioctl(fd, BIOCSETIF, &ifr) != 0) /* ifr.ifr_name is still the interface */
        die_fatal("BIOCSETIF to '%s' failed: %s", o->ifname, strerror(errno));
    u_int dlt = 0, one = 1;
    if (ioctl(fd, BIOCGDLT, &dlt) != 0)
        die_fatal("BIOCGDLT on '%s' failed: %s", o->ifname, strerror(errno));
    if (dlt != DLT_EN10MB)
        die_fatal("interface '%s' is not an Ethernet interface (BPF DLT %u)", o->ifname, dlt);
    if (ioctl(fd, BIOCSHDRCMPLT, &one) != 0) /* keep our source MAC as written */
        die_fatal("BIOCSHDRCMPLT on '%s' failed: %s", o->ifname, strerror(errno));
    /* Reject-all read filter so that NetBSD (which always attaches a reader and
     * sees sent packets) copies nothing into our unread buffer. FreeBSD treats a
     * one-insn "ret #k" BIOCSETF as a snaplen setting and keeps a write-only fd
     * off the reader list. Best effort: only saves CPU, sending works without it. */
    struct bpf_insn drop = BPF_STMT(BPF_RET | BPF_K, 0);
    struct bpf_program prog = { 1, &drop };
    (void)ioctl(fd, BIOCSETF, &prog);
    return fd;
}
#endif

static unsigned char *build_frame(const struct opts *o, const struct rawinfo *ri, unsigned idx,
                                  size_t *len)
{
    size_t n = HDR_LEN + o->payload;
    unsigned char *f = calloc(1, n);
    if (!f)
        die_fatal("out of memory");
    /* Ethernet */
    memcpy(f, o->dmac, 6);
    memcpy(f + 6, ri->smac, 6);
    f[12] = 0x08; f[13] = 0x00;
    /* IPv4 */
    unsigned char *ip = f + 14;
    uint16_t tot = (uint16_t)(20 + 8 + o->payload);
    ip[0] = 0x45;                 /* version 4, IHL 5 */
    ip[1] = 0;                    /* DSCP/ECN */
    ip[2] = tot >> 8; ip[3] = tot & 0xff;
    ip[4] = 0; ip[5] = 0;         /* id (atomic datagram, DF set: RFC 6864) */
    ip[6] = 0x40; ip[7] = 0;      /* DF, offset 0 */
    ip[8] = 64;                   /* TTL */
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 12, &o->src, 4);
    memcpy(ip + 16, &o->dest, 4);
    uint16_t ck = ip_checksum(ip, 20);
    ip[10] = ck >> 8; ip[11] = ck & 0xff;
    /* UDP */
    unsigned char *u = ip + 20;
    uint16_t sport = (uint16_t)(49152 + idx), ulen = (uint16_t)(8 + o->payload);
    u[0] = sport >> 8; u[1] = sport & 0xff;
    u[2] = o->port >> 8; u[3] = o->port & 0xff;
    u[4] = ulen >> 8; u[5] = ulen & 0xff;
    u[6] = 0; u[7] = 0;           /* checksum 0 = not computed (allowed for IPv4) */
    for (size_t i = 0; i < o->payload; i++)
        u[8 + i] = (unsigned char)i;
    *len = n;
    return f;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct sockaddr_in dst_in;
#if !RAW_BPF
    struct sockaddr_ll dst_ll;
#endif
    struct rawinfo ri;
    unsigned char *payload = NULL;
    unsigned n;

    parse_args(argc, argv, &o);
    n = o.threads;

    memset(&dst_in, 0, sizeof dst_in);
    dst_in.sin_family = AF_INET;
    dst_in.sin_addr = o.dest;
    dst_in.sin_port = htons((uint16_t)o.port);

    if (o.mode != MODE_RAW) {
        payload = malloc(o.payload);
        if (!payload)
            die_fatal("out of memory");
        for (unsigned i = 0; i < o.payload; i++)
            payload[i] = (unsigned char)i;
        if (o.if_set && if_nametoindex(o.ifname) == 0)
            die_fatal("interface '%s': no such interface", o.ifname);
    }

    /* Create all sockets up front so any failure is reported before "start". */
    for (unsigned i = 0; i < n; i++) {
        struct worker *w = &g_w[i];
        struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
        w->idx = (int)i;
        w->mode = o.mode;
        w->c = &g_ctr[i];
        if (o.mode == MODE_RAW) {
            w->fd = open_raw_socket(&o, &ri);
            if (i == 0 && (int)(o.payload + 28) > ri.mtu)
                die_fatal("payload %u + 28 header bytes exceeds MTU %d of '%s'", o.payload, ri.mtu,
                          o.ifname);
            w->buf = build_frame(&o, &ri, i, &w->len);
#if !RAW_BPF
            memset(&dst_ll, 0, sizeof dst_ll);
            dst_ll.sll_family = AF_PACKET;
            dst_ll.sll_ifindex = ri.ifindex;
            dst_ll.sll_protocol = htons(ETH_P_IP);
            dst_ll.sll_halen = 6;
            memcpy(dst_ll.sll_addr, o.dmac, 6);
            w->addr = (const struct sockaddr *)&dst_ll;
            w->alen = sizeof dst_ll;
#else
            w->addr = NULL; /* BPF write(): the frame carries the destination */
            w->alen = 0;
#endif
        } else {
            w->fd = open_udp_socket(&o);
            w->buf = payload;
            w->len = o.payload;
            w->addr = (const struct sockaddr *)&dst_in;
            w->alen = sizeof dst_in;
        }
        /* a blocked send (full socket buffer / stalled device) returns EAGAIN
         * after 200 ms so that the stop flag is noticed (BPF fds are not sockets:
         * ENOTSOCK, ignored; BPF write() fails with ENOBUFS instead of blocking) */
        setsockopt(w->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
#if HAVE_SENDMMSG
        if (o.mode == MODE_SENDMMSG) {
            w->batch = o.batch;
            w->iov.iov_base = w->buf;
            w->iov.iov_len = w->len;
            w->msgs = calloc(o.batch, sizeof *w->msgs);
            if (!w->msgs)
                die_fatal("out of memory");
            for (unsigned k = 0; k < o.batch; k++) {
                w->msgs[k].msg_hdr.msg_name = (void *)w->addr;
                w->msgs[k].msg_hdr.msg_namelen = w->alen;
                w->msgs[k].msg_hdr.msg_iov = &w->iov;
                w->msgs[k].msg_hdr.msg_iovlen = 1;
            }
        }
#endif
    }

    /* signals: handled by the main thread only (workers block them) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: interrupt clock_nanosleep */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigset_t blk, old;
    sigemptyset(&blk);
    sigaddset(&blk, SIGINT);
    sigaddset(&blk, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &blk, &old);

    printf("{\"event\":\"start\",\"mode\":\"%s\",\"threads\":%u,\"payload\":%u,\"dest\":\"%s\","
           "\"port\":%u,\"duration\":%.6g,\"interval\":%.6g,\"batch\":%u,",
           mode_names[o.mode], n, o.payload, o.dest_str, o.port, o.duration, o.interval,
           o.mode == MODE_SENDMMSG ? o.batch : 1);
    if (o.if_set) printf("\"interface\":\"%s\",", o.ifname);
    if (o.src_set) printf("\"src\":\"%s\",", o.src_str);
    if (o.mode == MODE_RAW) printf("\"frame\":%u,", HDR_LEN + o.payload);
    else printf("\"recverr\":%s,", (o.no_recverr || !HAVE_RECVERR) ? "false" : "true");
    if (o.pin) printf("\"pin\":true,");
    printf("\"version\":%d}\n", JSON_VERSION);
    fflush(stdout);

    double u0, s0, u_last, s_last;
    struct cpustat cs_last = read_proc_stat();
    cpu_self(&u0, &s0);
    u_last = u0; s_last = s0;
    struct timespec t0 = mono_now();

    for (unsigned i = 0; i < n; i++) {
        int e = pthread_create(&g_w[i].tid, NULL, worker_main, &g_w[i]);
        if (e != 0) {
            stop_workers(i);
            die_fatal("pthread_create failed: %s", strerror(e));
        }
        g_w[i].running = true;
        if (o.pin) {
            long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
            unsigned cpu = i % (unsigned)(ncpu > 0 ? ncpu : 1);
            e = pin_thread(g_w[i].tid, cpu);
            if (e != 0) {
                stop_workers(i + 1);
                die_fatal("pinning thread %u to CPU %u failed: %s%s", i, cpu, strerror(e),
#if defined(__NetBSD__)
                          e == EPERM ? " (NetBSD: needs root or sysctl "
                                       "security.models.extensions.user_set_cpu_affinity=1)" :
#endif
                          "");
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    struct timespec t_end = ts_add(t0, o.duration);
    struct timespec t_next = ts_add(t0, o.interval);
    struct timespec t_last = t0;
    struct totals tot = { 0, 0, 0, 0 }, rep = { 0, 0, 0, 0 };
    unsigned long long nrep = 1;

    for (;;) {
        struct timespec now = mono_now();
        if (g_signal || ts_cmp(&now, &t_end) >= 0)
            break;
        if (ts_cmp(&now, &t_next) >= 0) {
            double u, s;
            struct cpustat cs = read_proc_stat();
            cpu_self(&u, &s);
            collect(n, &tot);
            printf("{\"event\":\"interval\",\"t\":%.6f,\"seconds\":%.6f,\"packets\":%llu,\"bytes\":%llu,"
                   "\"enobufs\":%llu,\"eagain\":%llu,\"errors\":%llu,\"proc_user_s\":%.6f,"
                   "\"proc_sys_s\":%.6f,\"sys_busy_pct\":",
                   ts_sec(&now) - ts_sec(&t0), ts_sec(&now) - ts_sec(&t_last),
                   (unsigned long long)(tot.packets - rep.packets),
                   (unsigned long long)((tot.packets - rep.packets) * o.payload),
                   (unsigned long long)(tot.enobufs - rep.enobufs),
                   (unsigned long long)(tot.eagain - rep.eagain),
                   (unsigned long long)(tot.errors - rep.errors), u - u_last, s - s_last);
            print_busy(&cs_last, &cs);
            printf("}\n");
            fflush(stdout);
            rep = tot; t_last = now; u_last = u; s_last = s; cs_last = cs;
            /* schedule on the original grid; skip ticks if we fell behind */
            do { nrep++; t_next = ts_add(t0, o.interval * (double)nrep); } while (ts_cmp(&t_next, &now) <= 0);
        }
        struct timespec wake = ts_add(now, POLL_NS / 1e9);
        if (ts_cmp(&t_next, &wake) < 0) wake = t_next;
        if (ts_cmp(&t_end, &wake) < 0) wake = t_end;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL); /* EINTR on signal */
        collect(n, &tot);
    }

    stop_workers(n);
    struct timespec tf = mono_now();
    double u, s;
    struct cpustat cs = read_proc_stat();
    cpu_self(&u, &s);
    collect(n, &tot);

    if (g_signal)
        fprintf(stderr, PROG ": caught %s, stopping early\n", g_signal == SIGINT ? "SIGINT" : "SIGTERM");

    /* final (partial) interval so that the intervals add up to the totals */
    double last_len = ts_sec(&tf) - ts_sec(&t_last);
    if (last_len > 0) {
        printf("{\"event\":\"interval\",\"t\":%.6f,\"seconds\":%.6f,\"packets\":%llu,\"bytes\":%llu,"
               "\"enobufs\":%llu,\"eagain\":%llu,\"errors\":%llu,\"proc_user_s\":%.6f,"
               "\"proc_sys_s\":%.6f,\"sys_busy_pct\":",
               ts_sec(&tf) - ts_sec(&t0), last_len,
               (unsigned long long)(tot.packets - rep.packets),
               (unsigned long long)((tot.packets - rep.packets) * o.payload),
               (unsigned long long)(tot.enobufs - rep.enobufs),
               (unsigned long long)(tot.eagain - rep.eagain),
               (unsigned long long)(tot.errors - rep.errors), u - u_last, s - s_last);
        print_busy(&cs_last, &cs);
        printf("}\n");
    }

    double secs = ts_sec(&tf) - ts_sec(&t0);
    double pps = secs > 0 ? (double)tot.packets / secs : 0.0;
    double mbps = secs > 0 ? (double)tot.packets * o.payload * 8.0 / secs / 1e6 : 0.0;
    printf("{\"event\":\"end\",\"seconds\":%.6f,\"packets\":%llu,\"bytes\":%llu,\"enobufs\":%llu,"
           "\"eagain\":%llu,\"errors\":%llu,\"pps\":%.1f,\"mbps\":%.3f,\"proc_user_s\":%.6f,"
           "\"proc_sys_s\":%.6f,\"interrupted\":%s}\n",
           secs, (unsigned long long)tot.packets, (unsigned long long)(tot.packets * o.payload),
           (unsigned long long)tot.enobufs, (unsigned long long)tot.eagain,
           (unsigned long long)tot.errors, pps, mbps, u - u0, s - s0, g_signal ? "true" : "false");
    fflush(stdout);

    for (unsigned i = 0; i < n; i++) {
        close(g_w[i].fd);
        if (o.mode == MODE_RAW) free(g_w[i].buf);
#if HAVE_SENDMMSG
        free(g_w[i].msgs);
#endif
    }
    free(payload);
    if (ferror(stdout)) {
        fprintf(stderr, PROG ": error writing to stdout\n");
        return 1;
    }
    return 0;
}
