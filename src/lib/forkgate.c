/* forkgate.c: threads hold a shared gate while they allocate; fork takes it whole (forkgate.h). */
#include "forkgate.h"

#include <pthread.h>
#include <stdbool.h>

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static unsigned holders;  /* threads inside their work */
static unsigned forking;  /* forks under way: nobody enters meanwhile */
static unsigned long waits;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void prepare(void)
{
	pthread_mutex_lock(&gate_lock);
	forking++;
	if (holders)
		waits++;
	while (holders)
		pthread_cond_wait(&gate_cond, &gate_lock);
	/* held through the fork: the child's copy of it is taken anew below, never unlocked */
}

static void parent(void)
{
	forking--;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void child(void)
{
	/* the only thread now; the copies of the lock and condition were held by the thread that
	 * forked (this one) and may hold the other threads' waits: start them new */
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	gate_lock = m;
	gate_cond = c;
	holders = 0;
	forking = 0;
}

static void install(void)
{
	pthread_atfork(prepare, parent, child);
}

void forkgate_setup(void)
{
	pthread_once(&once, install);
}

void forkgate_enter(void)
{
	forkgate_setup();
	pthread_mutex_lock(&gate_lock);
	while (forking)
		pthread_cond_wait(&gate_cond, &gate_lock);
	holders++;
	pthread_mutex_unlock(&gate_lock);
}

void forkgate_leave(void)
{
	pthread_mutex_lock(&gate_lock);
	if (holders && !--holders)
		pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

unsigned long forkgate_waits(void)
{
	pthread_mutex_lock(&gate_lock);
	unsigned long n = waits;
	pthread_mutex_unlock(&gate_lock);
	return n;
}
