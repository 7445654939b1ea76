#include "log.h"

#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_stream;

/* A fork while another thread holds the lock must not leave the child's copy locked forever. */
static void log_prefork(void) { pthread_mutex_lock(&log_lock); }
static void log_postfork(void) { pthread_mutex_unlock(&log_lock); }

__attribute__((constructor)) static void log_register_fork_handlers(void)
{
    pthread_atfork(log_prefork, log_postfork, log_postfork);
}

static const char *const level_tag[] = {"", "error", "warning", "info", "debug"};

void blasft_log(blasft_log_level level, const char *fmt, ...)
{
    const blasft_config *cfg = blasft_cfg();
    if (level > cfg->log_level || level == BLASFT_LOG_OFF)
        return;
    pthread_mutex_lock(&log_lock);
    if (!log_stream) {
        log_stream = stderr;
        if (cfg->log_file[0]) {
            FILE *f = fopen(cfg->log_file, "a");
            if (f) {
                setvbuf(f, NULL, _IOLBF, 0);
                log_stream = f;
            } else {
                fprintf(stderr, "libblas_ft: cannot open BLASFT_LOG_FILE '%s'; logging to stderr\n",
                        cfg->log_file);
            }
        }
    }
    fprintf(log_stream, "libblas_ft: %s: ", level_tag[level]);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(log_stream, fmt, ap);
    va_end(ap);
    fputc('\n', log_stream);
    pthread_mutex_unlock(&log_lock);
}
