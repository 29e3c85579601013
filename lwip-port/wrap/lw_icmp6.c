/* Compiles lwIP's unmodified core/ipv6/icmp6.c with our lwipopts.h. */
#include "core/ipv6/icmp6.c"
