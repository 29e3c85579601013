/* Compiles lwIP's unmodified core/ipv4/ip4_frag.c with our lwipopts.h. */
#include "core/ipv4/ip4_frag.c"
