/* Compiles lwIP's unmodified core/ipv6/nd6.c with our lwipopts.h. */
#include "core/ipv6/nd6.c"
