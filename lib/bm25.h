/* Okapi BM25 ranking over small sets of short documents with weighted fields (BM25F's
 * simple form: a term's frequency in a document is the sum of its counts in each field
 * times the field's weight, and so is the document's length). Used to find tools for a
 * request (hub serve's find_tools) and entries of the catalog (hub catalog search).
 *
 * Text is split into terms at every character that is not an ASCII letter or digit
 * and at lower-to-upper case changes (get_file_contents, getFileContents and
 * get-file-contents all give get, file, contents), lower-cased, stripped of a few
 * English suffixes (searches, searching, searched: search) and of stop words. Bounded:
 * a term is at most 48 bytes (longer ones are cut), a query at most 32 terms. */
#ifndef ISOLATE_BM25_H
#define ISOLATE_BM25_H

#include <stddef.h>

#define BM25_MAX_QUERY_TERMS 32

struct bm25;

struct bm25 *bm25_new(void);
void bm25_free(struct bm25 *ix);

/* One field of a document: its text (NULL or "" is an empty field) and weight. */
struct bm25_field {
    const char *text;
    double weight;
};

/* Adds a document; its number (0, 1, ...) is what bm25_search returns. */
size_t bm25_add(struct bm25 *ix, const struct bm25_field *fields, size_t n_fields);

/* The k best documents for query, best first, into out (and their scores into scores
 * when not NULL); only documents that share a term with the query. Returns how many.
 * Ties keep the order of addition. */
size_t bm25_search(const struct bm25 *ix, const char *query, size_t *out, double *scores, size_t k);

/* The terms of text, as the index makes them, separated by single spaces, into buf
 * (for tests and tools that explain a ranking). */
void bm25_terms(const char *text, char *buf, size_t len);

#endif
