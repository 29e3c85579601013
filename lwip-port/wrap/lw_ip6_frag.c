/* Compiles lwIP's unmodified core/ipv6/ip6_frag.c with our lwipopts.h. */
#include "core/ipv6/ip6_frag.c"
