/* Compiles lwIP's unmodified core/stats.c with our lwipopts.h. */
#include "core/stats.c"
