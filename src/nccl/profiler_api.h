/*
 * profiler_api.h: NCCL's profiler plugin API, versions 1 to 5, declared from NCCL's
 * ext-profiler documentation (plugins/profiler/ in NCCL's repository): the structures NCCL
 * 2.23 to 2.28 pass to a profiler plugin and the tables it looks up by name
 * (ncclProfiler_v5 first, then older). Only the fields vigil's recorder reads are named with
 * care; the layouts are whole, as NCCL lays them out. Shared by the recorder
 * (src/nccl/recorder.c) and the test that drives it the way NCCL does.
 */
#ifndef VIGIL_NCCL_PROFILER_API_H
#define VIGIL_NCCL_PROFILER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum { ncclSuccess = 0, ncclInternalError = 3 } ncclResult_t;
typedef void (*ncclDebugLogger_t)(int level, unsigned long flags, const char *file, int line,
				  const char *fmt, ...);

enum {
	ncclProfileGroup = 1 << 0,
	ncclProfileColl = 1 << 1,
	ncclProfileP2p = 1 << 2,
	ncclProfileProxyOp = 1 << 3,
	ncclProfileProxyStep = 1 << 4,
	ncclProfileProxyCtrl = 1 << 5,
	ncclProfileKernelCh = 1 << 6,
};

/* v1: types as enums, the communicator named in each descriptor */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			uint8_t func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			uint8_t datatype;
			uint32_t op;
			size_t trafficBytes;
			uint8_t nMaxChannels, nWarps, algo, proto;
			int isCollnet, isNvls;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			uint8_t func;
			void *buff;
			uint8_t datatype;
			size_t count;
			int peer;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer, nSteps, chunkSize, isSend;
		} proxyOp;
	};
} descr_v1;

/* v2: strings for function and type */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			size_t trafficBytes;
			uint8_t nMaxChannels, nWarps;
			const char *algo, *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
	};
} descr_v2;

/* v3: trafficBytes gone; KernelCh events */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nMaxChannels, nWarps;
			const char *algo, *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
	};
} descr_v3;

/* v4: the communicator comes with init; descriptors lose name and hash */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels, nWarps;
			const char *algo, *proto;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
		} p2p;
	};
} descr_v4;

/* v5: 64-bit type; API events (not used here) before the same coll and p2p */
typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			bool graphCaptured;
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
		} collApi;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels, nWarps;
			const char *algo, *proto;
			void *parentGroup;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
			void *parentGroup;
		} p2p;
	};
} descr_v5;

typedef int event_state; /* ncclProfilerEventState_t: an enum, int-sized */

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask);
	ncclResult_t (*startEvent)(void *context, void **eHandle, descr_v1 *d);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, event_state s, void *args);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v1_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask);
	ncclResult_t (*startEvent)(void *context, void **eHandle, descr_v2 *d);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, event_state s, void *args);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v2_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask);
	ncclResult_t (*startEvent)(void *context, void **eHandle, descr_v3 *d);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, event_state s, void *args);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v3_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
			     uint64_t commHash, int nNodes, int nranks, int rank,
			     ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle, descr_v4 *d);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, event_state s, void *args);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
			     const char *commName, int nNodes, int nranks, int rank,
			     ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle, descr_v5 *d);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, event_state s, void *args);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

enum { ncclProfilerKernelChStop = 22 };

#endif
