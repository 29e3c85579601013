/* Compiles lwIP's unmodified core/timeouts.c with our lwipopts.h. */
#include "core/timeouts.c"
