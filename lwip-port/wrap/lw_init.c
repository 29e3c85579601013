/* Compiles lwIP's unmodified core/init.c with our lwipopts.h. */
#include "core/init.c"
