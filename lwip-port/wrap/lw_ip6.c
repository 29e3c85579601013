/* Compiles lwIP's unmodified core/ipv6/ip6.c with our lwipopts.h. */
#include "core/ipv6/ip6.c"
