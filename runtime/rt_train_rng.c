/*
 * rt_train_rng.c - the training runtime's random numbers: the data order's
 * RNG, shuffling and the dropout seeds.
 *
 * The RNG is xoshiro256** seeded through splitmix64 (Blackman and Vigna),
 * its whole state four words, which checkpoints carry. It needs nothing
 * else of the training runtime, so the trainer (rt_train.c) and the data
 * sets (rt_train_npy.c) both use it without using each other in a cycle.
 */
#include "rt_train_internal.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rt_train_rng_seed(uint64_t s[4], uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s[i] = splitmix64(&seed);
}

uint64_t rt_train_dropout_seed(uint64_t seed, uint64_t steps)
{
	uint64_t key = seed ^ 0x6f6e6e7864726f70ull; /* "onnxdrop": not the data order's stream */
	uint64_t x = splitmix64(&key) + steps * 0x9e3779b97f4a7c15ull;
	return splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rt_train_rng_next(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

uint64_t rt_train_rng_below(uint64_t s[4], uint64_t n)
{
	uint64_t threshold = (0 - n) % n; /* 2^64 mod n: the biased low values */
	uint64_t r;
	do
		r = rt_train_rng_next(s);
	while (r < threshold);
	return r % n;
}

void rt_train_shuffle(uint64_t s[4], int64_t *perm, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		perm[i] = i;
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)rt_train_rng_below(s, (uint64_t)i + 1);
		int64_t x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
}
