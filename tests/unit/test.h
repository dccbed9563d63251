/*
 * test.h - a minimal unit-test harness: CHECK macros that record failures
 * with file and line and keep going, and a table of test functions.
 *
 *   static void test_x(void) { CHECK(1 + 1 == 2); }
 *   TESTS(test_x)
 */
#ifndef ONNXC_TEST_H
#define ONNXC_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;
static const char *test_current;

#define CHECK(c)                                                                             \
	do {                                                                                 \
		if (!(c)) {                                                                  \
			fprintf(stderr, "%s:%d: %s: CHECK failed: %s\n", __FILE__, __LINE__, \
			        test_current, #c);                                           \
			test_failures++;                                                     \
		}                                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                                        \
	do {                                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);                           \
		if (a_ != b_) {                                                               \
			fprintf(stderr, "%s:%d: %s: CHECK_EQ failed: %s = %lld, %s = %lld\n", \
			        __FILE__, __LINE__, test_current, #a, a_, #b, b_);            \
			test_failures++;                                                      \
		}                                                                             \
	} while (0)

#define CHECK_STR(haystack, needle)                                                       \
	do {                                                                              \
		const char *h_ = (haystack), *n_ = (needle);                              \
		if (!h_ || !strstr(h_, n_)) {                                             \
			fprintf(stderr, "%s:%d: %s: expected \"%s\" in:\n%s\n", __FILE__, \
			        __LINE__, test_current, n_, h_ ? h_ : "(null)");          \
			test_failures++;                                                  \
		}                                                                         \
	} while (0)

typedef void (*test_fn)(void);
struct test_case {
	const char *name;
	test_fn fn;
};

static inline int test_main(const struct test_case *cases, int n, int argc, char **argv)
{
	for (int i = 0; i < n; i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		test_current = cases[i].name;
		cases[i].fn();
	}
	if (test_failures)
		fprintf(stderr, "%d check(s) failed\n", test_failures);
	return test_failures != 0;
}

#define T(fn) { #fn, fn },
#define TESTS(...)                                                                          \
	int main(int argc, char **argv)                                                     \
	{                                                                                   \
		static const struct test_case cases[] = { __VA_ARGS__ };                    \
		return test_main(cases, (int)(sizeof cases / sizeof cases[0]), argc, argv); \
	}

#endif
