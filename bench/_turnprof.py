import asyncio, os, sys, time, subprocess
sys.path.insert(0, os.path.dirname(__file__))
import _django
from turns import model_server, prepare
db = _django.setup()
model, port = model_server(int(os.environ.get("CHUNKS","5")), 0.0)
os.environ["ANTHROPIC_API_KEY"]="k"; os.environ["ANTHROPIC_BASE_URL"]=f"http://127.0.0.1:{port}"
from django.conf import settings
pairs = prepare(int(os.environ.get("N","60")))
from conversations.models import Conversation
from conversations.loop import run_turn
from conversations.llm import roles
class D:
    def send(self, chunk): pass
async def main():
    convs = [await asyncio.to_thread(lambda c=c: Conversation.objects.select_related("user").get(pk=c)) for c,_ in pairs]
    # warm
    for c in convs[:5]:
        await run_turn(c, text="go", user=c.user, display=D(), interactive=True)
    t0=time.process_time(); w0=time.perf_counter()
    for c in convs[5:]:
        await run_turn(c, text="go", user=c.user, display=D(), interactive=True)
    n=len(convs)-5
    print(f"per turn: cpu {(time.process_time()-t0)/n*1e3:.2f} ms wall {(time.perf_counter()-w0)/n*1e3:.2f} ms", file=sys.stderr)
try:
    asyncio.run(main())
finally:
    model.terminate()
