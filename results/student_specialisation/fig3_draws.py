"""Fig. 3 of chapter 09 over REPRO_SEED 0-24: the two-layer notebook's 2-D toy (cell "A picture of the theorems in two
dimensions") re-typed, per draw. Run from the repository root: `.venv/bin/python results/student_specialisation/fig3_draws.py`
(about 160 s on one busy core). Its printout is results/student_specialisation/fig3_draws.json."""
import sys, os, time; sys.path.insert(0, os.getcwd())
import numpy as np
from lib import teacher_student as TS
def run(rs, S=12, steps=20000):
    sd = lambda i: rs*1000+i
    T = TS.make_teacher(2, 2, 2, p=0.0, bias=0.3, seed=sd(900))
    X = TS.gaussian_inputs(500, 2, std=1.5, seed=sd(902))
    st = TS.make_student(2, 6, 2, S=S, seed=sd(903))
    net = TS.train_two_layer(T, st, X, steps, 0.1, batch_size=None)
    gap = lambda w,b: min(max(TS.alignment(T[0][0][j], T[0][1][j], s*w, s*b)) for j in range(2) for s in (1,-1))
    G = np.array([[gap(net[0][0][s,k], net[0][1][s,k]) for k in range(6)] for s in range(S)])
    al = G < 0.05
    act = (np.einsum("skd,nd->snk", net[0][0], X) + net[0][1][:,None,:] > 0).mean(1)
    obs = (act > 0.02) & (act < 0.98); loose = obs & ~al
    fan = np.linalg.norm(net[1][0], axis=1)
    ma = np.median(fan[al]); fl = fan[loose]/ma
    return dict(nal=int(al.sum()), nloose=int(loose.sum()), ratio=float(np.median(fl)), mean=float(fl.mean()),
                sh10=float((fl<0.1).mean()), sh20=float((fl<0.2).mean()), sh30=float((fl<0.3).mean()), big=int((fl>0.5).sum()), mx=float(fl.max()))
for S in (12,):   # (a 48-student variant was started and stopped for time)
    t=time.time(); rows=[run(rs,S) for rs in range(25)]
    print("S", S, "time", round(time.time()-t,1))
    for rs,r in enumerate(rows): print(rs, {k:(round(v,3) if isinstance(v,float) else v) for k,v in r.items()})
    for k in ("ratio","mean","sh10","sh20","sh30"):
        a=np.array([r[k] for r in rows]); print(k, "mean %.3f sd %.3f min %.3f max %.3f"%(a.mean(),a.std(ddof=1),a.min(),a.max()))
    sys.stdout.flush()
