/*
 * Compiles lwIP's unmodified core/tcp_out.c with our lwipopts.h, and puts
 * one function of it behind a wrapper: tcp_split_unsent_seg() is renamed
 * here, and the name lwIP's tcp.c calls is ours.
 */
#define tcp_split_unsent_seg	lw_tcp_split_unsent_seg
#include "core/tcp_out.c"
#undef tcp_split_unsent_seg

err_t tcp_split_unsent_seg(struct tcp_pcb *pcb, u16_t split);

/*
 * The persist timer cuts the first unsent segment at the app's window
 * when the window is open but too small for it (tcp.c, tcp_slowtmr).
 * lwIP 2.1 means to move the segment's FIN (and PSH) to the second part,
 * but sets the first part's flags with TCPH_SET_FLAG, which only adds
 * bits: the FIN stays on the first part as well.  The app's TCP then takes
 * the end of the first part for the end of the stream -- a clean EOF,
 * short by the second part, which it answers with a RST when it comes.
 * With offloads, segments of up to 64 KiB against windows of a few app
 * MSS make this an everyday case under load (test_stack,
 * test_persist_split_keeps_fin_last).  So whatever the second part took,
 * the first part loses; with a lwIP that gets it right, this is a no-op.
 */
err_t
tcp_split_unsent_seg(struct tcp_pcb *pcb, u16_t split)
{
	struct tcp_seg *useg = pcb != NULL ? pcb->unsent : NULL;
	struct tcp_seg *next = useg != NULL ? useg->next : NULL;
	err_t err;

	err = lw_tcp_split_unsent_seg(pcb, split);
	if (err == ERR_OK && useg != NULL && useg->next != next &&
	    useg->next != NULL)
		TCPH_UNSET_FLAG(useg->tcphdr,
		    TCPH_FLAGS(useg->next->tcphdr) & (TCP_FIN | TCP_PSH));
	return err;
}
