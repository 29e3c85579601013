/* Compiles lwIP's unmodified core/ipv4/ip4.c with our lwipopts.h. */
#include "core/ipv4/ip4.c"
