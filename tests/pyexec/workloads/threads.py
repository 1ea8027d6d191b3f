# A workload for the python seccomp preset: threads, thread pools, timers, asyncio.
import threading, concurrent.futures, queue, asyncio, time
out = []
ts = [threading.Thread(target=lambda i=i: out.append(i * i)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sorted(out))
with concurrent.futures.ThreadPoolExecutor(4) as ex: print(list(ex.map(abs, [-1, -2, -3])))
q = queue.Queue(); threading.Timer(0.01, lambda: q.put(1)).start(); print(q.get(timeout=2))
async def main():
    await asyncio.sleep(0.01)
    r = await asyncio.gather(*(asyncio.sleep(0, result=i) for i in range(3)))
    loop = asyncio.get_running_loop()
    r2 = await loop.run_in_executor(None, sum, [1, 2])
    return r, r2
print(asyncio.run(main()))
ev = threading.Event(); ev.wait(0.01); lock = threading.Condition(); 
with lock: lock.wait(0.01)
time.sleep(0.01)
print("workload done")
