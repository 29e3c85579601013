/* Compiles lwIP's unmodified core/ip.c with our lwipopts.h. */
#include "core/ip.c"
