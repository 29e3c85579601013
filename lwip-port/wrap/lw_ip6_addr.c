/* Compiles lwIP's unmodified core/ipv6/ip6_addr.c with our lwipopts.h. */
#include "core/ipv6/ip6_addr.c"
