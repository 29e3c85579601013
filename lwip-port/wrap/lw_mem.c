/* Compiles lwIP's unmodified core/mem.c with our lwipopts.h. */
#include "core/mem.c"
