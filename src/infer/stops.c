/*
 * stops.c - stop strings and hold-back (stops.h). A stop string may arrive split over
 * several tokens, so the last len(longest stop) - 1 bytes are held until it is certain
 * they do not begin one; a token may also end inside a UTF-8 character, and a stream's
 * chunk must be whole characters (the server's are JSON strings), so a character's
 * first bytes are held until its last arrives.
 */
#include "infer/stops.h"

#include <stdlib.h>
#include <string.h>

void andrea_stops_init(andrea_stops *st, const char *const *stops, int n_stops) {
    memset(st, 0, sizeof *st);
    st->stops = stops;
    st->n_stops = n_stops;
    for (int i = 0; i < n_stops; i++) {
        size_t k = strlen(stops[i]);
        if (k > 0 && k - 1 > st->hold) st->hold = k - 1;
    }
}

void andrea_stops_free(andrea_stops *st) {
    andrea_bytes_free(&st->pend);
    st->scan_from = 0;
}

int andrea_stops_push(andrea_stops *st, const void *bytes, size_t n) {
    return n ? andrea_bytes_append(&st->pend, bytes, n) : 0;
}

void andrea_stops_echoed(andrea_stops *st) { st->scan_from = st->pend.len; }

/* The earliest stop string in pend at or after scan_from, or -1. */
static long find_stop(const andrea_stops *st) {
    long at = -1;
    for (int i = 0; i < st->n_stops; i++) {
        size_t k = strlen(st->stops[i]);
        for (size_t o = st->scan_from; k && o + k <= st->pend.len && (at < 0 || (long)o < at); o++)
            if (memcmp(st->pend.data + o, st->stops[i], k) == 0) {
                at = (long)o;
                break;
            }
    }
    return at;
}

/* n less the first bytes of a UTF-8 character that pend[0, n) ends inside of. */
static size_t whole_chars(const uint8_t *b, size_t n) {
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        uint8_t c = b[n - back];
        if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        int need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return (size_t)need > back ? n - back : n; /* not complete yet: held whole */
    }
    return n;
}

int andrea_stops_check(const andrea_stops *st, size_t *rel) {
    long at = find_stop(st);
    if (at >= 0) {
        *rel = (size_t)at;
        return 1;
    }
    size_t n = st->pend.len > st->hold ? st->pend.len - st->hold : 0;
    if (n < st->scan_from) n = st->scan_from; /* an echoed prompt is never a stop's start */
    *rel = whole_chars(st->pend.data, n);
    return 0;
}

void andrea_stops_release(andrea_stops *st, size_t n) {
    if (n) memmove(st->pend.data, st->pend.data + n, st->pend.len - n);
    st->pend.len -= n;
    st->scan_from = st->scan_from > n ? st->scan_from - n : 0;
}
