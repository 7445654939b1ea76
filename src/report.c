#include "report.h"

#include "config.h"
#include "hostblas.h"
#include "log.h"

#include "blasft_build_config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t stats[BLASFT_STAT_COUNT];
static blasft_call_stat *call_list;

/* The report keeps the first events in full; later ones are only counted. */
#define REPORT_EVENTS_KEPT 64
static pthread_mutex_t event_lock = PTHREAD_MUTEX_INITIALIZER;
static blasft_event kept_events[REPORT_EVENTS_KEPT];
static uint64_t events_total;
static blasft_event_callback event_cb;
static void *event_cb_user;

static pid_t loading_pid;
static struct timespec loaded_at; /* wall clock, as file times are */

static void event_prefork(void) { pthread_mutex_lock(&event_lock); }
static void event_postfork(void) { pthread_mutex_unlock(&event_lock); }

__attribute__((constructor)) static void report_init(void)
{
    loading_pid = getpid();
    clock_gettime(CLOCK_REALTIME, &loaded_at);
    /* A fork while another thread holds the lock must not leave the child's copy locked. */
    pthread_atfork(event_prefork, event_postfork, event_postfork);
}

const char *blasft_version(void) { return BLASFT_VERSION; }

int blasft_timing_enabled(void) { return blasft_cfg()->report[0] != '\0'; }

uint64_t blasft_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void blasft_call_record(blasft_call_stat *s, blasft_where where, uint64_t ns)
{
    __atomic_fetch_add(&s->count[where], 1, __ATOMIC_RELAXED);
    if (ns)
        __atomic_fetch_add(&s->nanoseconds[where], ns, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&s->registered, __ATOMIC_ACQUIRE) &&
        !__atomic_exchange_n(&s->registered, 1, __ATOMIC_ACQ_REL)) {
        blasft_call_stat *head = __atomic_load_n(&call_list, __ATOMIC_ACQUIRE);
        do
            s->next = head;
        while (!__atomic_compare_exchange_n(&call_list, &head, s, 1, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE));
    }
}

void blasft_stat_add(blasft_stat_id id, uint64_t n) { __atomic_fetch_add(&stats[id], n, __ATOMIC_RELAXED); }

void blasft_get_stats(blasft_stats *out)
{
    uint64_t v[BLASFT_STAT_COUNT];
    for (int i = 0; i < BLASFT_STAT_COUNT; i++)
        v[i] = __atomic_load_n(&stats[i], __ATOMIC_RELAXED);
    out->protected_gemms = v[BLASFT_STAT_PROTECTED_GEMMS];
    out->unprotected_gemms = v[BLASFT_STAT_UNPROTECTED_GEMMS];
    out->checks = v[BLASFT_STAT_CHECKS];
    out->errors_detected = v[BLASFT_STAT_ERRORS_DETECTED];
    out->errors_corrected = v[BLASFT_STAT_ERRORS_CORRECTED];
    out->blocks_recomputed = v[BLASFT_STAT_BLOCKS_RECOMPUTED];
    out->uncorrectable = v[BLASFT_STAT_UNCORRECTABLE];
    out->encoder_faults = v[BLASFT_STAT_ENCODER_FAULTS];
    out->faults_injected = v[BLASFT_STAT_FAULTS_INJECTED];
    out->false_alarms = v[BLASFT_STAT_FALSE_ALARMS];
}

void blasft_reset_stats(void)
{
    for (int i = 0; i < BLASFT_STAT_COUNT; i++)
        __atomic_store_n(&stats[i], 0, __ATOMIC_RELAXED);
}

void blasft_set_event_callback(blasft_event_callback cb, void *user)
{
    pthread_mutex_lock(&event_lock);
    event_cb = cb;
    event_cb_user = user;
    pthread_mutex_unlock(&event_lock);
}

static const char *const event_kind_names[] = {"detected", "corrected", "recomputed",
                                               "uncorrectable", "encoder_fault"};

void blasft_event_emit(const blasft_event *ev)
{
    pthread_mutex_lock(&event_lock);
    if (events_total < REPORT_EVENTS_KEPT)
        kept_events[events_total] = *ev;
    events_total++;
    blasft_event_callback cb = event_cb;
    void *user = event_cb_user;
    pthread_mutex_unlock(&event_lock);

    char in_matrix[48] = "";
    if (ev->matrix >= 0)
        snprintf(in_matrix, sizeof in_matrix, " of matrix %lld", (long long)ev->matrix);
    blasft_log(ev->kind == BLASFT_EVENT_UNCORRECTABLE ? BLASFT_LOG_WARN : BLASFT_LOG_INFO,
               "%s (%c): %s in block (%lld,%lld) element (%lld,%lld)%s: |syndrome| %.6g, "
               "threshold %.6g, %s",
               ev->routine, ev->type, event_kind_names[ev->kind], (long long)ev->block_row,
               (long long)ev->block_col, (long long)ev->row, (long long)ev->col, in_matrix,
               ev->syndrome, ev->threshold, ev->action);
    if (cb)
        cb(ev, user);
}

void blasft_report_lost_result(const char *routine, char type, blasft_on_error on_error)
{
    const int abort_now = on_error == BLASFT_ON_ERROR_ABORT;
    const blasft_event ev = {BLASFT_EVENT_UNCORRECTABLE, routine ? routine : "gemm", type, -1, -1,
                             -1, -1, 0.0, 0.0, abort_now ? "aborted" : "reported", -1};
    blasft_stat_add(BLASFT_STAT_UNCORRECTABLE, 1);
    blasft_event_emit(&ev);
    blasft_log(BLASFT_LOG_ERROR, "%s: the GPU failed while C was copied back, and with beta != 0 "
               "the part already written cannot be computed again: C is wrong%s", ev.routine,
               abort_now ? "; aborting" : "");
    if (abort_now)
        abort();
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void write_config(FILE *f, const blasft_config *c)
{
    fprintf(f, "  \"config\": {\n");
    fprintf(f, "    \"block_size\": %d,\n    \"gpu_block_size\": %d,\n", c->block_size,
            c->gpu_block_size);
    fprintf(f, "    \"omega\": %.17g,\n", c->omega);
    fprintf(f, "    \"mode\": \"%s\",\n    \"device\": \"%s\",\n", blasft_mode_name(c->mode),
            blasft_device_name(c->device));
    fprintf(f, "    \"checksums\": %d,\n    \"weights\": \"%s\",\n", c->checksums,
            blasft_weights_name(c->weights));
    fprintf(f, "    \"threshold\": \"%s\",\n    \"pea_p\": %d,\n",
            blasft_threshold_name(c->threshold), c->pea_p);
    fprintf(f, "    \"on_error\": \"%s\",\n", blasft_on_error_name(c->on_error));
    if (c->min_flops < 0)
        fprintf(f, "    \"min_flops\": \"auto\",\n");
    else
        fprintf(f, "    \"min_flops\": %.17g,\n", c->min_flops);
    fprintf(f, "    \"log\": \"%s\",\n", blasft_log_level_name(c->log_level));
    fprintf(f, "    \"cublas\": \"%s\",\n", blasft_off_on_name(c->cublas));
    fprintf(f, "    \"offload_trace\": \"%s\",\n", blasft_off_on_name(c->offload_trace));
    fprintf(f, "    \"promote\": \"%s\",\n    \"gpu_promote_mem\": %llu,\n",
            blasft_promote_name(c->promote), (unsigned long long)c->gpu_promote_mem);
    fprintf(f, "    \"gpu_graphs\": \"%s\",\n", blasft_gpu_graphs_name(c->gpu_graphs));
    fprintf(f, "    \"gpu_batched\": \"%s\",\n", blasft_gpu_batched_name(c->gpu_batched));
    fprintf(f, "    \"cache\": \"%s\",\n    \"device_mem\": %llu,\n    \"staging\": %llu,\n"
               "    \"hash_threads\": %d,\n",
            blasft_cache_mode_name(c->cache), (unsigned long long)c->device_mem,
            (unsigned long long)c->staging, c->hash_threads);
    fprintf(f, "    \"gpu_pea_lists\": \"%s\",\n    \"gpu_row_checks\": \"%s\",\n"
               "    \"gpu_helper_priority\": \"%s\",\n",
            blasft_gpu_pea_lists_name(c->gpu_pea_lists), blasft_gpu_row_checks_name(c->gpu_row_checks),
            blasft_gpu_helper_priority_name(c->gpu_helper_priority));
    fprintf(f, "    \"log_file\": ");
    json_string(f, c->log_file);
    fprintf(f, ",\n    \"host_blas\": ");
    json_string(f, blasft_host_path()[0] ? blasft_host_path() : c->host_blas);
    fprintf(f, ",\n    \"host_blas_threads\": ");
    json_string(f, blasft_host_spin());
    fprintf(f, ",\n    \"report\": ");
    json_string(f, c->report);
    fprintf(f, ",\n    \"inject\": ");
    json_string(f, c->inject);
    fprintf(f, "\n  },\n");
}

static void write_calls(FILE *f)
{
    static const char *const where_name[BLASFT_WHERE_COUNT] = {"host", "gpu"};
    fprintf(f, "  \"calls\": {");
    int first = 1;
    for (blasft_call_stat *s = __atomic_load_n(&call_list, __ATOMIC_ACQUIRE); s; s = s->next) {
        uint64_t total = 0, ns = 0;
        char where[16] = "";
        for (int w = 0; w < BLASFT_WHERE_COUNT; w++) {
            uint64_t cnt = __atomic_load_n(&s->count[w], __ATOMIC_RELAXED);
            total += cnt;
            ns += __atomic_load_n(&s->nanoseconds[w], __ATOMIC_RELAXED);
            if (cnt) {
                if (where[0])
                    strcat(where, "+");
                strcat(where, where_name[w]);
            }
        }
        fprintf(f, "%s\n    ", first ? "" : ",");
        json_string(f, s->name);
        fprintf(f, ": {\"count\": %llu, \"where\": \"%s\", \"seconds\": %.9f", (unsigned long long)total,
                where, (double)ns * 1e-9);
        for (int w = 0; w < BLASFT_WHERE_COUNT; w++)
            fprintf(f, ", \"%s_count\": %llu", where_name[w],
                    (unsigned long long)__atomic_load_n(&s->count[w], __ATOMIC_RELAXED));
        fprintf(f, "}");
        first = 0;
    }
    fprintf(f, "%s},\n", first ? "" : "\n  ");
}

static void write_abft(FILE *f)
{
    blasft_stats st;
    blasft_get_stats(&st);
    fprintf(f,
            "  \"abft\": {\n    \"protected_gemms\": %llu,\n    \"unprotected_gemms\": %llu,\n"
            "    \"checks\": %llu,\n    \"errors_detected\": %llu,\n    \"errors_corrected\": %llu,\n"
            "    \"blocks_recomputed\": %llu,\n    \"uncorrectable\": %llu,\n"
            "    \"encoder_faults\": %llu,\n    \"faults_injected\": %llu,\n"
            "    \"false_alarms\": %llu\n  },\n",
            (unsigned long long)st.protected_gemms, (unsigned long long)st.unprotected_gemms,
            (unsigned long long)st.checks, (unsigned long long)st.errors_detected,
            (unsigned long long)st.errors_corrected, (unsigned long long)st.blocks_recomputed,
            (unsigned long long)st.uncorrectable, (unsigned long long)st.encoder_faults,
            (unsigned long long)st.faults_injected, (unsigned long long)st.false_alarms);
}

/* A double as JSON, which has no Inf or NaN: those are written as the strings "inf", "-inf" and
 * "nan" (an exponent flip can make a syndrome infinite). buf holds at least 32 bytes. */
static const char *json_number(char *buf, size_t size, double v)
{
    if (v != v)
        return "\"nan\"";
    if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
        return v > 0 ? "\"inf\"" : "\"-inf\"";
    snprintf(buf, size, "%.17g", v);
    return buf;
}

static void write_events(FILE *f)
{
    pthread_mutex_lock(&event_lock);
    uint64_t kept = events_total < REPORT_EVENTS_KEPT ? events_total : REPORT_EVENTS_KEPT;
    fprintf(f, "  \"events_total\": %llu,\n  \"events\": [", (unsigned long long)events_total);
    for (uint64_t i = 0; i < kept; i++) {
        const blasft_event *e = &kept_events[i];
        char sb[32], tb[32];
        fprintf(f,
                "%s\n    {\"kind\": \"%s\", \"routine\": \"%s\", \"type\": \"%c\", \"block\": [%lld, "
                "%lld], \"element\": [%lld, %lld], \"matrix\": %lld, \"syndrome\": %s, "
                "\"threshold\": %s, \"action\": \"%s\"}",
                i ? "," : "", event_kind_names[e->kind], e->routine, e->type,
                (long long)e->block_row, (long long)e->block_col, (long long)e->row,
                (long long)e->col, (long long)e->matrix, json_number(sb, sizeof sb, e->syndrome),
                json_number(tb, sizeof tb, e->threshold), e->action);
    }
    fprintf(f, "%s]\n", kept ? "\n  " : "");
    pthread_mutex_unlock(&event_lock);
}

/* Writes the JSON report to path. Returns 0 on success. */
/* Writes the report to path; a path that cannot be opened or written (a missing directory, a
 * full disk) is named with the reason on stderr. */
static int report_write(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "libblas_ft: cannot write BLASFT_REPORT '%s': %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\n  \"version\": \"%s\",\n  \"pid\": %ld,\n", BLASFT_VERSION, (long)getpid());
    write_config(f, blasft_cfg());
    write_calls(f);
    write_abft(f);
    write_events(f);
    fprintf(f, "}\n");
    const int failed = ferror(f);
    errno = 0;
    if (fclose(f) != 0 || failed) {
        fprintf(stderr, "libblas_ft: writing BLASFT_REPORT '%s' failed: %s\n", path,
                errno ? strerror(errno) : "write error");
        return -1;
    }
    return 0;
}

/* Whether path was written while this process ran (file times are coarse: 20 ms of slack). */
static int written_since_load(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    const double at = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec,
                 load = (double)loaded_at.tv_sec + 1e-9 * (double)loaded_at.tv_nsec;
    return at >= load - 0.02;
}

/* The exit report. A forked child writes its own, to "<path>.<pid>", so it never overwrites the
 * parent's. A process that called no BLAS routine leaves a report written while it ran: that of
 * a program it started (a wrapper such as timeout, a shell or mpirun inherits LD_PRELOAD and
 * BLASFT_REPORT and exits after the program, whose report it used to overwrite with an empty
 * one). */
__attribute__((destructor)) static void report_at_exit(void)
{
    const char *path = getenv("BLASFT_REPORT");
    if (!path || !*path)
        return;
    path = blasft_cfg()->report;
    if (!*path)
        return;
    if (getpid() == loading_pid) {
        if (!__atomic_load_n(&call_list, __ATOMIC_ACQUIRE) && written_since_load(path))
            return;
        report_write(path);
    } else {
        char child_path[BLASFT_PATH_MAX + 24];
        snprintf(child_path, sizeof child_path, "%s.%ld", path, (long)getpid());
        report_write(child_path);
    }
}
