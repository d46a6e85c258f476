/* attn_page.h - the explorer page's fixed parts (attn_page.c), NULL-ended line arrays. */
#ifndef ANDREA_INSPECT_ATTN_PAGE_H
#define ANDREA_INSPECT_ATTN_PAGE_H

extern const char *const andrea_attn_page_body[];   /* style, then the body's markup */
extern const char *const andrea_attn_page_script[]; /* the script, after the data */
extern const char *const andrea_attn_page_cell[];   /* its cell view (attn_page_cell.c) */
extern const char *const andrea_attn_page_live[];   /* its live view (attn_page_live.c) */
extern const char *const andrea_attn_page_end[];    /* its last lines */

#endif
