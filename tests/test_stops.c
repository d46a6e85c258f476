/* test_stops.c - stop strings and hold-back (src/infer/stops.c), as andrea_generate() and
 * the server's sequences use them: a stop split over tokens or at the very start, held
 * bytes released once they cannot begin a stop, several stops (the earliest wins), no
 * stops, an empty stop, an echoed prompt, and UTF-8 characters split over tokens held
 * until whole. Every check names the exact chunks released. */
#include <string.h>

#include "infer/stops.h"
#include "test_util.h"

/* What a run released: the chunks joined by '|', and whether a stop string ended it. */
typedef struct {
    char out[256];
    int stopped;
} run_result;

static void add_chunk(run_result *r, const uint8_t *b, size_t n) {
    size_t at = strlen(r->out);
    if (at) r->out[at++] = '|';
    memcpy(r->out + at, b, n);
    r->out[at + n] = 0;
}

/* Feeds tokens (NULL-terminated) as andrea_generate() does: push, check, release; at the
 * end the rest, if no stop string came. An empty chunk is not one. */
static run_result run(const char *const *stops, int n_stops, const char *const *tokens) {
    run_result r = {{0}, 0};
    andrea_stops st;
    andrea_stops_init(&st, stops, n_stops);
    for (int i = 0; tokens[i] && !r.stopped; i++) {
        size_t rel = 0;
        CHECK(andrea_stops_push(&st, tokens[i], strlen(tokens[i])) == 0);
        r.stopped = andrea_stops_check(&st, &rel);
        if (rel) add_chunk(&r, st.pend.data, rel);
        andrea_stops_release(&st, r.stopped ? st.pend.len : rel);
    }
    if (!r.stopped && st.pend.len) add_chunk(&r, st.pend.data, st.pend.len);
    andrea_stops_free(&st);
    return r;
}

#define EXPECT(r, text, stop)                                                           \
    do {                                                                                \
        run_result _r = (r);                                                            \
        if (strcmp(_r.out, text) || _r.stopped != (stop)) {                            \
            fprintf(stderr, "%s:%d: released '%s' (stopped %d), expected '%s' (%d)\n",  \
                    __FILE__, __LINE__, _r.out, _r.stopped, text, stop);                \
            tu_failures++;                                                              \
        }                                                                               \
    } while (0)

static void stop_strings(void) {
    const char *end[] = {"END"};
    /* split over three tokens: "Hello" at once, " " once "EN" is the only open prefix */
    EXPECT(run(end, 1, (const char *[]){"Hello E", "N", "D more", NULL}), "Hello| ", 1);
    const char *tag[] = {"<|end|>"};
    EXPECT(run(tag, 1, (const char *[]){"<|e", "nd|>rest", NULL}), "", 1);
    EXPECT(run(tag, 1, (const char *[]){"<|end|>", NULL}), "", 1);
    /* "xE" might begin END until "Nd" shows it does not: then released, and "Nd" at the end */
    EXPECT(run(end, 1, (const char *[]){"xE", "Nd", NULL}), "xE|Nd", 0);
    EXPECT(run(end, 1, (const char *[]){"abcdef", "EN", "!", NULL}), "abcd|ef|E|N!", 0);
}

static void several_and_none(void) {
    /* the earliest in the text wins, whatever its place in the list */
    const char *three[] = {"STOP", "\n\n", "x"};
    EXPECT(run(three, 3, (const char *[]){"ab\n", "cx\n\nd", NULL}), "ab\nc", 1);
    EXPECT(run(three, 3, (const char *[]){"ab\n", "\nSTOPx", NULL}), "ab", 1);
    EXPECT(run(three, 3, (const char *[]){"ST", "OP", NULL}), "", 1);
    EXPECT(run(three, 3, (const char *[]){"STO", "RY", NULL}), "ST|ORY", 0);
    /* no stops (and an empty one, which never matches): every token goes as it comes */
    EXPECT(run(NULL, 0, (const char *[]){"ab", "cd", NULL}), "ab|cd", 0);
    const char *empty[] = {""};
    EXPECT(run(empty, 1, (const char *[]){"ab", "cd", NULL}), "ab|cd", 0);
}

static void utf8(void) {
    /* é (C3 A9) split over two tokens: "a" first, the character whole with "b" */
    EXPECT(run(NULL, 0, (const char *[]){"a\xC3", "\xA9" "b", NULL}), "a|\xC3\xA9" "b", 0);
    /* a four-byte character in three tokens: nothing until its last byte */
    EXPECT(run(NULL, 0, (const char *[]){"\xF0\x9F", "\x98", "\x80!", NULL}),
           "\xF0\x9F\x98\x80!", 0);
    /* held for a stop and for a character at once: "END" after "é" */
    const char *end[] = {"END"};
    EXPECT(run(end, 1, (const char *[]){"\xC3", "\xA9xyz", "END", NULL}), "\xC3\xA9x|yz", 1);
    /* a three-byte character cut in the middle by the stop's hold-back */
    EXPECT(run(end, 1, (const char *[]){"a\xE2\x82\xAC", "EN", "x", NULL}),
           "a|\xE2\x82\xAC|E|Nx", 0);
}

/* The server echoes the prompt: its bytes are released as they are, never a stop's start. */
static void echo(void) {
    const char *end[] = {"END"};
    andrea_stops st;
    andrea_stops_init(&st, end, 1);
    size_t rel = 99;
    CHECK(andrea_stops_push(&st, "xEN", 3) == 0);
    andrea_stops_echoed(&st);
    CHECK(andrea_stops_push(&st, "D", 1) == 0);
    CHECK(andrea_stops_check(&st, &rel) == 0);
    CHECK(rel == 3);
    andrea_stops_release(&st, rel);
    CHECK(st.scan_from == 0 && st.pend.len == 1 && st.pend.data[0] == 'D');
    CHECK(andrea_stops_push(&st, "ENDz", 4) == 0);
    CHECK(andrea_stops_check(&st, &rel) == 1);
    CHECK(rel == 1);
    andrea_stops_free(&st);
    CHECK(st.pend.len == 0 && st.pend.data == NULL);
}

int main(void) {
    stop_strings();
    several_and_none();
    utf8();
    echo();
    if (tu_failures) fprintf(stderr, "test_stops: %d failures\n", tu_failures);
    return tu_failures ? 1 : 0;
}
