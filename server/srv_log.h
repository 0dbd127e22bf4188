/* srv_log.h — herd-server's log lines and the clocks it reads.
 *
 * A log line goes to stderr as "YYYY-MM-DD hh:mm:ss.mmm herd-server LEVEL: message" when its level is at
 * most the configured one (SRV_LOG_* of srv_config.h).  Stateless: safe from any thread.
 */
#ifndef HERD_SRV_LOG_H
#define HERD_SRV_LOG_H

/* Writes one line at `level` if level <= max_level (the server's srv_config.log_level). */
void srv_log(int max_level, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Monotonic time in seconds (intervals, timeouts). */
double srv_now_s(void);
/* Wall-clock time in seconds since the Unix epoch (ping replies). */
double srv_unix_s(void);

#endif
