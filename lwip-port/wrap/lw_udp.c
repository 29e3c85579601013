/* Compiles lwIP's unmodified core/udp.c with our lwipopts.h. */
#include "core/udp.c"
