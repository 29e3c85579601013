/* Compiles lwIP's unmodified core/memp.c with our lwipopts.h. */
#include "core/memp.c"
