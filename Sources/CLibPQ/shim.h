#include <libpq-fe.h>
#include <locale.h>

/// glibc's strtod_l, declared here rather than through _GNU_SOURCE, which would change
/// the system headers' definitions against the ones Swift's Glibc module sees.
extern double strtod_l(const char *text, char **end, locale_t locale);

/// strtod in the C locale, whatever the process's: PostgreSQL writes numbers with a point.
static inline double stowage_strtod_c(const char *text, char **end) {
    static locale_t c_locale = (locale_t)0;
    if (c_locale == (locale_t)0) c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return strtod_l(text, end, c_locale);
}
