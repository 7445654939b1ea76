/* The fake host BLAS of the forwarding test: what it records of each call and the values its
 * routines return. Shared by the fake library (fake_record.c, generated/fake_host.c) and the
 * test (test_forward.c), which computes the expected records with the same encoders. */
#ifndef BLASFT_TEST_FAKE_HOST_H
#define BLASFT_TEST_FAKE_HOST_H

#include "shim/cblas_enums.h"

#include <complex.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_ARGS 24
#define FAKE_POINTEE_BYTES 16

/* The most recent call into the fake. */
typedef struct fake_call {
    char routine[32];
    int nargs;
    /* pointer arguments: the address; by-value ones: the encoded value */
    uint64_t value[FAKE_MAX_ARGS];
    /* pointer arguments: the first bytes they point to (the scalar, for a scalar argument) */
    unsigned char pointee[FAKE_MAX_ARGS][FAKE_POINTEE_BYTES];
    unsigned long calls; /* number of calls so far, of any routine */
} fake_call;

/* In the fake library (fake_record.c). */
void fake_record_begin(const char *routine, int nargs);
void fake_record_pointer(int i, const void *p, size_t pointee_bytes);
void fake_record_value(int i, uint64_t value);

static inline uint64_t fake_encode_int(int v) { return (uint64_t)(uint32_t)v; }

static inline uint64_t fake_encode_float(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

static inline uint64_t fake_encode_double(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

/* FNV-1a: a return value that differs between routines, so a result cannot come from another. */
static inline uint32_t fake_name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Exactly representable in float: an integer below 2^17 plus a quarter. */
static inline double fake_return_real(const char *routine)
{
    return (double)(fake_name_hash(routine) % 100000u) + 0.25;
}

static inline int fake_return_int(const char *routine)
{
    return (int)(fake_name_hash(routine) % 100000u) + 3;
}

static inline double _Complex fake_return_complex(const char *routine)
{
    double re = fake_return_real(routine);
    return CMPLX(re, -re - 0.5);
}

#endif
