"""Hand-written content of eval/conversations_v1: six pairs of friends, their life events, follow-up threads
and small talk. generate.py composes it into sessions (seeded); nothing here is generated.

An event is one line: ``when | what the speaker says | what the other answers | questions``. ``when`` is
how the speaker dates it relative to the session ("yesterday", "last weekend", … or "-" for none); the
speaker's text holds it as ``{when}``. Questions are ``kind: text`` separated by `` ;; `` and are
answered by the speaker's turn alone. A thread is two or three events in different sessions and one
multi-hop question that needs all of them.
"""

CONVERSATIONS = [
    {
        "key": "amara-jonah",
        "a": "Amara",
        "b": "Jonah",
        "start": "2023-02-04",
        "sessions": 19,
        "a_events": """
last weekend | We went to the rescue centre in Otley {when} and came home with a greyhound called Biscuit | No way, a greyhound! Send pics immediately | single-hop: What breed of dog did Amara adopt? ;; temporal: When did Amara bring her new dog home?
last week | Got moved onto the paediatric ward {when}, it's a totally different pace from A&E | Kids must be harder and easier at the same time | single-hop: Which hospital unit did Amara transfer to from emergency? ;; temporal: When did Amara start working with children at the hospital?
this morning | Biscuit chewed the strap off my new sunglasses {when}, I could have cried | Ha, the classic greyhound welcome gift | single-hop: What did Amara's dog destroy?
last night | My sister Zainab told me {when} she's pregnant, I'm going to be an auntie! | Congratulations auntie Amara! | single-hop: Who in Amara's family is expecting a baby? ;; temporal: When did Amara learn she would become an aunt?
a couple of weeks ago | I signed up for the Leeds Half {when}, it's in May so no backing out now | May is close! You'll smash it | single-hop: Which race did Amara enter? ;; temporal: When did Amara register for the half marathon?
yesterday | I finally did the 18 km long run {when}, first time I've gone that far without walking | That's huge! Your legs must be wrecked | single-hop: What was the longest distance Amara had managed without stopping to walk? ;; temporal: When did Amara complete her longest training run?
last weekend | Tried that Ethiopian place on Call Lane {when}, the injera was incredible | I've walked past it a hundred times, is it pricey? | single-hop: What cuisine did Amara try for the first time on Call Lane?
last month | I booked flights to Lagos {when} for Grandma's 90th in December | Ninety! That's going to be a party | single-hop: Where is Amara travelling for a family birthday? ;; temporal: When did Amara book her trip for her grandmother's birthday?
yesterday | Passed my band 6 interview {when}! Senior staff nurse from next month | Told you they'd be mad not to pick you | single-hop: What promotion did Amara get? ;; temporal: When did Amara find out she got the senior nurse job?
- | Honestly I think I want to do a night course in sign language, so many families on the ward could use it | That would make you even more brilliant at your job | open-domain: Would Amara be interested in learning a way to communicate with deaf patients?
last weekend | Ran the Leeds Half {when} in 1:58, sub two hours!! | Under two hours, legend | single-hop: What was Amara's finishing time in her race? ;; temporal: When did Amara run the half marathon?
on Saturday | Took Biscuit to Golden Acre Park {when} and he did zoomies around the whole lake | Greyhound zoomies are the purest thing | single-hop: Where did Amara take her dog for a big run around a lake?
yesterday | My niece Safiya arrived {when}, 3.2 kilos and a full head of hair | Welcome to the world Safiya! | single-hop: What is the name of Amara's sister's baby? ;; temporal: When was Amara's niece born?
""",
        "b_events": """
last weekend | I bought an old Ford Transit {when}, going to turn it into a camper | A van life era, I love it | single-hop: What vehicle did Jonah buy to convert? ;; temporal: When did Jonah buy the van?
yesterday | Started guitar lessons {when} with a guy called Pete above the music shop | Play me Wonderwall by Christmas | single-hop: What instrument is Jonah learning? ;; temporal: When did Jonah have his first guitar lesson?
last week | Fitted the solar panel on the van roof {when}, 200 watts, it actually charges | Free electricity! | single-hop: How powerful is the panel Jonah mounted on the camper?
a few days ago | Got offered the head of department job at school {when} but I turned it down, I'd never be in the workshop | Respect for knowing what you want | single-hop: What job did Jonah decline and why? ;; temporal: When did Jonah turn down the promotion at school?
last weekend | Drove the van up to Ullswater {when}, first proper night sleeping in it | How was the bed? | single-hop: Where did Jonah spend his first night in the camper? ;; temporal: When did Jonah first sleep in the finished van?
yesterday | My dad had his hip replaced {when}, he's already complaining about the hospital food | That means he's fine then | single-hop: What surgery did Jonah's father have? ;; temporal: When was Jonah's dad operated on?
- | I've been reading loads about Scandinavian joinery, no nails no screws, just the wood holding itself together | That's so satisfying to think about | open-domain: Would Jonah enjoy a course on traditional woodworking techniques?
last night | Played my first open mic {when} at the Fenton, hands shaking the whole time | You did it though! What did you play? | single-hop: Where did Jonah perform in public for the first time? ;; temporal: When did Jonah play his first open mic?
two weeks ago | Split up with Rachel {when}, it was mutual, just drifting for ages | I'm sorry, that's still hard | single-hop: Who did Jonah break up with? ;; temporal: When did Jonah's relationship end?
last weekend | My year 10s won the regional design and technology prize {when} with the bird box they designed | Proud teacher moment | single-hop: What did Jonah's students win a prize for? ;; temporal: When did Jonah's class win the regional competition?
this morning | Van failed its MOT {when}, rust on the sills, gutted | Ugh, is it fixable? | single-hop: Why did Jonah's camper fail its roadworthiness test?
on Sunday | Went wild swimming in the Wharfe {when}, I could not feel my feet after a minute | You're mad, it's freezing | single-hop: Where did Jonah go for a cold river swim?
last week | Adopted a pair of chickens {when} for the back garden, named them Salt and Pepper | Fresh eggs every morning! | single-hop: What are the names of Jonah's hens? ;; temporal: When did Jonah get his chickens?
""",
        "threads": """
a | last week | Started a couch to 5k with the running club {when}, aiming for a half by spring | You'll love it once it clicks || a | yesterday | The physio says it's shin splints {when}, no running for three weeks | Nooo, just when you were flying || multi-hop: What injury set back the training Amara began with her club?
b | last weekend | Welded the floor of the van {when}, found a massive rust hole under the passenger seat | Better you found it than the MOT || b | yesterday | The van passed its retest {when} after I redid the sills | Finally on the road! || multi-hop: Which two rust repairs did Jonah make to get his camper legal?
a | - | Grandma in Lagos says she wants everyone to wear matching gele and aso ebi at her party | That'll make amazing photos || a | last week | Picked up the fabric for my aso ebi {when}, it's emerald green | Emerald will look stunning on you || multi-hop: What colour fabric did Amara choose for her grandmother's party outfit?
""",
    },
    {
        "key": "devika-tomasz",
        "a": "Devika",
        "b": "Tomasz",
        "start": "2023-09-09",
        "sessions": 18,
        "a_events": """
last week | My supervisor finally approved my thesis topic {when}: microplastics in seagrass meadows | Seagrass! That's such a niche | single-hop: What is Devika's PhD research about? ;; temporal: When did Devika's supervisor sign off on her research topic?
yesterday | Got back from the field trip to the Isles of Scilly {when}, collected 60 sediment cores | Sixty! Your back must hate you | single-hop: How many samples did Devika bring back from her fieldwork? ;; temporal: When did Devika return from fieldwork on the islands?
last weekend | Did my PADI advanced open water {when}, the night dive was terrifying and beautiful | A night dive?! Brave | single-hop: What diving qualification did Devika earn? ;; temporal: When did Devika do her advanced dive course?
this morning | The lab fridge died overnight and I found out {when}, three months of samples thawed | Oh no, that's devastating | single-hop: What happened to Devika's samples in the lab? ;; temporal: When did Devika discover the fridge failure?
last week | Presented a poster at the Plymouth marine science conference {when} and someone from Cefas wanted to chat | That's a great connection | single-hop: Which organisation showed interest in Devika's poster?
a couple of weeks ago | My flatmate Ayesha moved out {when}, it's weirdly quiet | Will you get someone new in? | single-hop: Who moved out of Devika's flat? ;; temporal: When did Devika's flatmate leave?
- | I keep thinking I'd love to work somewhere where my research actually changes fishing policy, not just sits in a journal | That's a good compass to have | open-domain: Would Devika prefer a job influencing government marine regulation over pure academia?
last night | Mum called {when}, she's finally retiring from the pharmacy in Leicester | After how many years? | single-hop: What job is Devika's mother retiring from? ;; temporal: When did Devika hear that her mother was retiring?
yesterday | Paper got accepted in Marine Pollution Bulletin {when}! First author! | Dr Devika in the making | single-hop: Which journal accepted Devika's first paper? ;; temporal: When did Devika's paper get accepted?
last weekend | Learned to make dosa from scratch {when}, the batter fermented perfectly on the radiator | Radiator fermentation, very scientific | single-hop: What dish did Devika teach herself to cook with a fermented batter?
on Friday | Had my viva {when}, passed with minor corrections!! | DOCTOR Devika!!! | single-hop: What was the result of Devika's thesis defence? ;; temporal: When did Devika pass her viva?
last week | Accepted the postdoc in Bergen {when}, starting in September | Norway! You'll need a better coat | single-hop: Where is Devika moving for her next job? ;; temporal: When did Devika accept the position abroad?
""",
        "b_events": """
last weekend | Sold out of sourdough by 9am {when}, I need a second oven | Problem of success | single-hop: What ran out early at Tomasz's bakery?
yesterday | Signed the lease on the unit next door {when}, we're knocking through to make a café | A café too! Ambitious | single-hop: What is Tomasz expanding his bakery into? ;; temporal: When did Tomasz sign the lease for the second unit?
last week | Our head baker Gosia quit {when}, she's going back to Kraków | That's a big loss, she was amazing | single-hop: Which employee left Tomasz's bakery and where is she going? ;; temporal: When did Tomasz lose his head baker?
this morning | The flour delivery didn't turn up {when} so I drove to the mill in Wantage myself | Now that's dedication | single-hop: Where did Tomasz go to fetch flour himself?
last month | Entered the World Bread Awards {when} with the rye and caraway loaf | What's the verdict? | single-hop: Which loaf did Tomasz submit to a bread competition? ;; temporal: When did Tomasz enter the bread awards?
yesterday | Got silver at the bread awards {when}! Rye category | Silver! Frame that certificate | single-hop: What medal did Tomasz's rye win? ;; temporal: When did Tomasz find out how his loaf placed?
- | I grew up watching my babcia make pierogi every Christmas Eve and honestly that's why I bake at all | That's such a lovely reason | open-domain: Is Tomasz's love of baking connected to his family traditions?
last weekend | Took my son Kuba to his first football match {when}, Oxford United lost but he didn't care | First match is a rite of passage | single-hop: Which team did Tomasz's son see play? ;; temporal: When did Tomasz take his son to a football game?
last week | Hired two apprentices {when} through the college scheme | Training the next generation! | single-hop: How did Tomasz recruit new trainees?
a few days ago | Health inspection {when}, we got five stars again | Never in doubt | single-hop: What hygiene rating did Tomasz's bakery receive?
last weekend | The café opened {when}, queue down the street by eight | Amazing, all that work paid off | single-hop: How busy was Tomasz's café on opening day? ;; temporal: When did Tomasz's café open?
yesterday | Booked a week in the Tatras for the family {when}, first holiday in three years | You deserve it so much | single-hop: Where is Tomasz going on holiday with his family? ;; temporal: When did Tomasz book the mountain holiday?
""",
        "threads": """
a | last week | Applied for the Bergen postdoc {when}, it's on seagrass restoration | That sounds made for you || a | yesterday | Had the Bergen interview {when} over Zoom, they asked loads about my Scilly data | Sounds like it went well! || multi-hop: Which fieldwork did the Norwegian interviewers ask Devika about?
b | - | The rye starter I use is the one my grandmother gave my mum in 1979 | Forty years old! That's an heirloom || b | last week | Someone offered me five hundred quid {when} for a jar of the old starter | Tell me you said no || multi-hop: How much was Tomasz offered for the sourdough culture passed down from his grandmother?
b | yesterday | Kuba started nursery {when}, he cried, I cried, the teacher didn't | Oh bless you both || b | this morning | Kuba brought home a painting of the bakery {when}, it's going on the wall by the till | Best art in Oxford || multi-hop: What did Tomasz's son paint after starting nursery?
""",
    },
    {
        "key": "lena-marcus",
        "a": "Lena",
        "b": "Marcus",
        "start": "2024-01-13",
        "sessions": 19,
        "a_events": """
last week | Noah was born {when}! 7 pounds 4, we're exhausted and so in love | Welcome to the world little Noah! | single-hop: What's the name of Lena's baby? ;; temporal: When was Lena's son born?
yesterday | First night Noah slept five hours straight {when}, I woke up panicking | Five hours is a miracle | single-hop: How long did Lena's baby sleep in one go for the first time?
last weekend | Took Noah swimming {when} at the leisure centre baby class, he loved the splashing | Water baby! | single-hop: What activity did Lena try with her baby at the leisure centre? ;; temporal: When did Lena first take her son swimming?
a few days ago | Went back to freelance design {when}, only two days a week for now | How does it feel to be back? | single-hop: How many days is Lena working after her return? ;; temporal: When did Lena go back to work?
last month | Rebranded a little coffee roaster in Bristol {when}, my favourite project in years | Love a good coffee brand | single-hop: What kind of business did Lena design a new identity for?
- | I've been sketching children's book illustrations during naps, just animals in jumpers | That's adorable, you should publish them | open-domain: Might Lena be interested in illustrating a picture book?
this morning | Noah's first tooth came through {when}, no wonder he's been a grump | Poor guy, teething is brutal | single-hop: What explained Noah's bad mood? ;; temporal: When did Lena's baby cut his first tooth?
last weekend | We finally had the naming party {when} at my mum's in Frome | How many people came? | single-hop: Where was Noah's naming celebration held? ;; temporal: When did Lena hold the naming party?
yesterday | Pitched to the Bath rugby club for their new kit design {when}, fingers crossed | Ooh, big client | single-hop: Which sports club did Lena pitch to? ;; temporal: When did Lena pitch for the rugby kit job?
last week | Ollie got the job in Cardiff {when}, so we might be moving | That's a big change | single-hop: Where did Lena's partner get a job? ;; temporal: When did Lena's partner get the job offer?
on Saturday | Noah took his first steps {when}, three wobbly steps to the sofa | He's walking!! | single-hop: How far did Lena's son walk the first time? ;; temporal: When did Noah start walking?
two weeks ago | Had my wisdom tooth out {when}, still eating soup | Soup life, I'm sorry | single-hop: What dental work did Lena have?
""",
        "b_events": """
last night | Long shift {when}, we had a chip pan fire in a flat above a takeaway | Was everyone okay? | single-hop: What kind of fire did Marcus attend above a takeaway? ;; temporal: When was Marcus called to the kitchen fire?
last weekend | My under-9s won their first match {when}, 3–2, I lost my voice shouting | Coach Marcus! | single-hop: What was the score when Marcus's youth team won? ;; temporal: When did Marcus's under-9s get their first win?
yesterday | Passed the crew manager assessment {when}, so I'm stepping up | Promotion! | single-hop: Which rank did Marcus qualify for? ;; temporal: When did Marcus pass his promotion assessment?
last week | Helped at a road traffic collision on the M5 {when}, cutting a driver out of a car | That sounds intense, are you alright? | single-hop: What rescue did Marcus do on the motorway?
a couple of weeks ago | Started learning Welsh on Duolingo {when}, my nan would be proud | Da iawn! | single-hop: What language is Marcus studying? ;; temporal: When did Marcus start learning his nan's language?
- | If I wasn't a firefighter I think I'd be a PE teacher, I love watching kids get better at something | You'd be great at that | open-domain: Would Marcus enjoy a job coaching children?
last weekend | Did the Three Peaks challenge {when} for the Fire Fighters Charity, 24 hours, no sleep | Madness, well done | single-hop: Which endurance challenge did Marcus complete for charity? ;; temporal: When did Marcus do the three mountains in a day?
this morning | My car got written off {when}, someone went into the back of me at the lights | Are you hurt?? | single-hop: What happened to Marcus's car?
last week | Moved into the new flat in Bedminster {when}, finally no flatmates | Your own place! | single-hop: Which area of Bristol did Marcus move to? ;; temporal: When did Marcus move into his own flat?
yesterday | Asked Jess to move in with me {when} and she said yes | That's lovely news | single-hop: Who is moving in with Marcus? ;; temporal: When did Marcus ask his girlfriend to live with him?
on Sunday | Took the team to the Ashton Gate stadium tour {when}, they got to sit in the dugout | The kids must have loved that | single-hop: What treat did Marcus organise for his football team?
last month | Got a commendation from the chief fire officer {when} for the M5 rescue | You deserve it | single-hop: What recognition did Marcus receive for the motorway rescue? ;; temporal: When was Marcus commended?
""",
        "threads": """
a | last week | Ollie and I went to see a house in Penarth {when}, three bed with a garden | Penarth is gorgeous || a | yesterday | Our offer got accepted {when}! We're moving in June | Homeowners!! || multi-hop: In which town is the house Lena and her partner bought?
b | - | My under-9s have a striker called Mo who's fearless, he'll go far | Sounds like a future pro || b | last weekend | Mo got picked for the Bristol City academy trial {when} | Your first future pro! || multi-hop: Which academy invited Marcus's young striker to a trial?
b | last week | Jess started her nursing degree {when} at UWE | Good for her! || b | yesterday | Jess passed her first placement {when} on the cardiac ward | She must be thrilled || multi-hop: Where did Marcus's girlfriend do the first placement of the degree she started?
""",
    },
    {
        "key": "rosa-hana",
        "a": "Rosa",
        "b": "Hana",
        "start": "2023-05-06",
        "sessions": 18,
        "a_events": """
last week | Picked the first tomatoes of the year {when}, the Black Krim ones | Nothing beats a homegrown tomato | single-hop: Which tomato variety did Rosa harvest first? ;; temporal: When did Rosa pick her first tomatoes?
yesterday | My grandson Mateo came to stay {when} for the whole half term | Lots of baking then! | single-hop: Which grandchild stayed with Rosa over the school holiday? ;; temporal: When did Mateo arrive for his visit?
last weekend | Joined the U3A watercolour group {when}, everyone is ancient and lovely | Ha, you'll fit right in | single-hop: What kind of painting class did Rosa join? ;; temporal: When did Rosa join the art group?
this morning | Dentist told me {when} I need a crown on the back tooth, £650! | That's robbery | single-hop: How much will Rosa's dental treatment cost?
a couple of weeks ago | Took the train to Edinburgh {when} to see the Monet exhibition | Was it crowded? | single-hop: Which exhibition did Rosa travel north for? ;; temporal: When did Rosa go to Edinburgh?
- | Forty years of teaching primary and I still dream about marking spelling tests | That's funny, it never leaves you | open-domain: Did Rosa spend her career in education?
last weekend | The allotment committee gave me the best-kept plot cup {when} | Well deserved! | single-hop: What award did Rosa receive for her allotment? ;; temporal: When did Rosa win the allotment prize?
yesterday | Fell off the step stool {when} reaching for the jam jars, my wrist is purple | Please get that looked at! | single-hop: How did Rosa hurt her wrist? ;; temporal: When did Rosa have her fall at home?
last week | The X-ray showed a hairline fracture {when}, so I'm in a cast for six weeks | Oh Rosa, no gardening then | single-hop: How long does Rosa need to wear a cast?
on Sunday | Made forty jars of damson jam {when} for the church fair | Save me one! | single-hop: What did Rosa make for the church fair? ;; temporal: When did Rosa make the damson preserves?
last month | My friend Beryl passed away {when}, we taught together for twenty years | I'm so sorry Rosa | single-hop: Who was Rosa's colleague that died? ;; temporal: When did Beryl die?
last week | Sold my first painting {when} at the U3A show, a heron on the canal, twenty-five pounds | An actual sale! | single-hop: What was the subject of the first painting Rosa sold?
""",
        "b_events": """
yesterday | Got my offer from Edinburgh for veterinary medicine {when}!! | Hana that's wonderful! | single-hop: What degree is Hana going to study? ;; temporal: When did Hana get her university offer?
last weekend | Worked my first shift at the garden centre {when}, so many people asking about slugs | Beer traps! Tell them beer traps | single-hop: Where did Hana get a weekend job? ;; temporal: When did Hana start working at the garden centre?
last week | Passed my driving test {when} on the second try | Freedom! | single-hop: How many attempts did Hana need to pass her test? ;; temporal: When did Hana pass her driving test?
a few days ago | Got my A-level results {when}: A*, A, A, I'm in! | Clever girl, I knew it | single-hop: What grades did Hana get in her exams? ;; temporal: When did Hana receive her results?
last weekend | Moved into halls {when}, my roommate has a snake | A snake! Is it friendly? | single-hop: What pet does Hana's roommate keep? ;; temporal: When did Hana move into student accommodation?
- | I've wanted to work with horses since I was six and fell off my cousin's pony | And you got straight back on I bet | open-domain: Would Hana be drawn to specialising in equine care?
yesterday | First anatomy practical {when}, we dissected a sheep's heart | Did you feel faint? | single-hop: What organ did Hana dissect in her first lab? ;; temporal: When did Hana have her first anatomy practical?
last week | Joined the university rowing club {when}, 5am starts, what was I thinking | You'll be so fit | single-hop: Which sport did Hana take up at university? ;; temporal: When did Hana join the rowing club?
this morning | Failed my biochemistry mock {when}, 38 percent, I'm devastated | It's a mock, that's what they're for | single-hop: Which subject did Hana fail a practice exam in?
last month | Volunteered at the lambing season on a farm in the Borders {when} | Did you deliver any? | single-hop: What farm work did Hana volunteer for? ;; temporal: When did Hana help with lambing?
last weekend | Our boat came second in the novice regatta {when} | Second! Brilliant | single-hop: Where did Hana's crew place in their first race? ;; temporal: When did Hana race in the novice regatta?
yesterday | Got a summer placement at the Dick vet equine hospital {when} | Horses at last! | single-hop: Where will Hana do her summer placement? ;; temporal: When did Hana find out about her summer placement?
""",
        "threads": """
a | last week | Planted a fig tree by the south wall {when}, Mateo helped dig the hole | Figs in Yorkshire, brave || a | yesterday | The fig gave us its first three figs {when}, Mateo ate two | Mateo earned them || multi-hop: Who helped Rosa plant the tree that gave its first fruit?
b | - | My cousin has a pony called Thistle and she's the whole reason I want to be a vet | Ponies are trouble || b | last week | Thistle got colic {when} and I sat with her all night while the vet came | Poor thing, is she alright? || multi-hop: What illness did the pony that inspired Hana's career have?
a | - | Beryl and I always said we'd go to Venice together when we retired | You should go for her || a | last week | Booked Venice {when}, for Beryl, in October | She'd love that || multi-hop: Whose memory is Rosa honouring with her autumn trip?
""",
    },
    {
        "key": "kwame-sofia",
        "a": "Kwame",
        "b": "Sofia",
        "start": "2024-04-06",
        "sessions": 19,
        "a_events": """
last week | Accepted the job in Lisbon {when}, backend lead at a fintech | Lisbon! I'm jealous | single-hop: What role did Kwame accept abroad? ;; temporal: When did Kwame accept the Lisbon job?
yesterday | Found a flat in Alfama {when}, tiny but the view of the river is unreal | Alfama is so charming | single-hop: Which Lisbon neighbourhood is Kwame's new flat in? ;; temporal: When did Kwame find his apartment?
last weekend | Went surfing at Costa da Caparica {when}, mostly fell off | Everyone falls off at first | single-hop: Where did Kwame try surfing? ;; temporal: When did Kwame go surfing?
this morning | Prod went down for two hours {when} because of a bad migration, my fault | Ouch, those are the worst | single-hop: What caused the production outage Kwame was responsible for?
a couple of weeks ago | Started Portuguese classes {when} twice a week after work | Tudo bem? | single-hop: What is Kwame learning in evening classes? ;; temporal: When did Kwame start his language lessons?
- | I miss my mum's jollof so much, nobody here even knows what it is | You should cook it for your colleagues | open-domain: Does Kwame miss Ghanaian home cooking?
last weekend | Hosted a jollof night for my team {when}, the Portuguese guys were converted | Jollof diplomacy! | single-hop: What dish did Kwame cook for his colleagues? ;; temporal: When did Kwame host the dinner for his team?
last week | Got my NIF and bank account sorted {when}, Portuguese bureaucracy nearly broke me | The paperwork never ends | single-hop: What admin did Kwame complete in Portugal?
yesterday | My brother Kofi got into medical school in Kumasi {when} | Doctor in the family! | single-hop: Which family member is going to study medicine? ;; temporal: When did Kwame's brother get into medical school?
last night | Gave a talk at the Lisbon Python meetup {when} on idempotent payment APIs | Nerd! Proud of you | single-hop: What topic did Kwame speak about at the meetup? ;; temporal: When did Kwame give his meetup talk?
on Saturday | Hiked the Sintra trail up to the Moorish castle {when}, my calves are screaming | Those steps are brutal | single-hop: Which castle did Kwame hike up to?
last month | Got promoted to engineering manager {when}, six people now | Boss Kwame | single-hop: How many people does Kwame manage after his promotion? ;; temporal: When did Kwame become a manager?
""",
        "b_events": """
yesterday | Delivered a litter of nine labrador puppies by caesarean {when} | Nine! Are they all okay? | single-hop: How many puppies did Sofia deliver by surgery? ;; temporal: When did Sofia perform the caesarean on the labrador?
last week | Started at the new practice in Porto {when}, much bigger team | Exciting, how are the people? | single-hop: Where is Sofia's new veterinary job? ;; temporal: When did Sofia start at the new clinic?
last weekend | Adopted a one-eyed cat {when} from the clinic, his name is Pirata | Pirata is perfect | single-hop: What is special about the cat Sofia adopted? ;; temporal: When did Sofia adopt Pirata?
a few days ago | Had a horrible day {when}, put down a dog I'd treated since he was a puppy | That's so hard, I'm sorry | single-hop: Why was Sofia upset at work?
last night | Went to a fado bar in Ribeira {when}, cried at every song | That's what fado is for | single-hop: What music did Sofia hear in Ribeira? ;; temporal: When did Sofia go to the fado bar?
- | Some days I think about doing exotic animals, reptiles and birds, nobody in Porto does them properly | You'd be the go-to person | open-domain: Would Sofia consider specialising in reptiles and birds?
last weekend | Ran the Porto half marathon {when}, 2:05 | Nice time! | single-hop: What was Sofia's time in the Porto race? ;; temporal: When did Sofia run the half marathon?
yesterday | My sister Inês got engaged {when} in Madeira | Congratulations to her! | single-hop: Where did Sofia's sister get engaged? ;; temporal: When did Sofia's sister get engaged?
last week | Removed a fishing hook from a pelican {when}, he was not grateful | Ha, pelicans have no manners | single-hop: What did Sofia take out of a pelican?
this morning | Pirata brought a live gecko into the bedroom {when} | Great hunter, terrible roommate | single-hop: What did Sofia's cat bring into the house?
last month | Passed my exotic animal certificate {when} | Your dream! | single-hop: What specialist qualification did Sofia obtain? ;; temporal: When did Sofia get her exotics certificate?
on Sunday | Cooked francesinha for my parents {when}, dad said it was better than the café | High praise from a Porto dad | single-hop: Which Porto sandwich did Sofia make for her parents?
""",
        "threads": """
a | last week | Bought a secondhand surfboard {when}, a 7'6 funboard | A real surfer now || a | yesterday | Snapped the funboard {when} on a rock at Ericeira, so sad | RIP board || multi-hop: Where did Kwame break the board he bought secondhand?
b | - | Inês is planning her wedding in Funchal for next summer | A Madeira wedding! || b | last week | Inês asked me to be her maid of honour {when} | You'll be amazing || multi-hop: In which city is the wedding Sofia will be maid of honour at?
a | last month | My manager said {when} I should apply for the engineering manager track | That's a vote of confidence || a | last week | Finished the leadership course the company paid for {when}, two days of role play | Role play, my nightmare || multi-hop: What training did Kwame do after being encouraged toward management?
""",
    },
    {
        "key": "ines-callum",
        "a": "Ines",
        "b": "Callum",
        "start": "2023-10-14",
        "sessions": 18,
        "a_events": """
last week | Won the principal cello audition for the Ulster Orchestra {when}! | Principal! That's massive | single-hop: Which orchestra position did Ines win? ;; temporal: When did Ines win the audition?
yesterday | Played the Elgar concerto {when} with the youth orchestra as soloist, hands still shaking | The Elgar! How did it go? | single-hop: Which concerto did Ines perform as a soloist? ;; temporal: When did Ines play the Elgar?
last weekend | Bought a new bow {when}, pernambuco, it cost more than my car | Worth it if it sings | single-hop: What did Ines spend more on than her car?
this morning | Woke up with tendonitis in my left wrist {when}, doctor says rest for two weeks | Rest! Actually rest! | single-hop: What injury stopped Ines from playing? ;; temporal: When did Ines's wrist problem start?
a couple of weeks ago | Started teaching cello at a primary school in Belfast {when} on Tuesdays | Tiny cellists! | single-hop: Where does Ines teach on Tuesdays? ;; temporal: When did Ines start teaching at the school?
- | Honestly I'd love to play in a folk band one day, trad sessions in the pub are my happy place | You'd be brilliant at it | open-domain: Would Ines enjoy playing Irish traditional music?
last weekend | Recorded the Bach suites {when} in a church in Holywood, the acoustics were perfect | Can I hear it? | single-hop: What did Ines record in a church? ;; temporal: When did Ines record the Bach suites?
last week | My cello's seam opened up {when} because of the dry heating | Oh no, can it be fixed? | single-hop: What went wrong with Ines's instrument?
yesterday | Got my cello back from the luthier {when}, sounds better than before | Phew | single-hop: Who repaired Ines's instrument? ;; temporal: When did Ines get her cello back?
last night | Played a trad session at Kelly's Cellars {when}, I was terrible and loved it | That's the spirit | single-hop: Where did Ines join a traditional music session? ;; temporal: When did Ines first play a trad session?
on Friday | Toured the orchestra to Dublin {when}, the National Concert Hall | How was the hall? | single-hop: Which venue did Ines's orchestra play in Dublin?
last month | Moved in with my girlfriend Niamh {when} in the Cathedral Quarter | Cohabiting! | single-hop: Who does Ines live with now? ;; temporal: When did Ines move in with Niamh?
""",
        "b_events": """
last weekend | Bought a used food truck {when}, it used to be an ice cream van | From ice cream to what? | single-hop: What was Callum's food truck before he bought it? ;; temporal: When did Callum buy his truck?
yesterday | Finally got the catering licence from the council {when} | Legal at last | single-hop: What permit did Callum obtain? ;; temporal: When did Callum get his food licence?
last week | First day trading at St George's Market {when}, sold out of fish tacos by one | Fish tacos, I want some | single-hop: What sold out on Callum's first trading day? ;; temporal: When was Callum's first day at the market?
this morning | The generator died {when} halfway through lunch, had to give refunds | Disaster, sorry | single-hop: What broke during Callum's lunch service?
a couple of weeks ago | Quit the restaurant job {when}, the truck is full time now | Leap of faith! | single-hop: What did Callum give up to run the truck full time? ;; temporal: When did Callum quit the restaurant?
- | Growing up in Portrush my granda had a boat and we'd eat mackerel straight off the line | That explains the seafood obsession | open-domain: Is Callum's cooking influenced by a seaside childhood?
last weekend | Did the Stendhal festival {when}, three days, no sleep, best takings ever | Festival money! | single-hop: Which festival did Callum trade at? ;; temporal: When did Callum do the festival?
last week | Got a five-star review in the Belfast Telegraph {when} | You're famous | single-hop: Which newspaper reviewed Callum's food? ;; temporal: When did Callum get the newspaper review?
yesterday | Burned my forearm on the fryer {when}, nasty blister | Run it under cold water! | single-hop: How did Callum injure his arm?
last night | My partner Dara proposed {when} at the Giant's Causeway | Engaged!! | single-hop: Where did Callum's partner propose? ;; temporal: When did Callum get engaged?
on Sunday | Cooked for a wedding of 120 people {when} from the truck | That's a big service | single-hop: How many guests did Callum cater for at a wedding?
last month | Hired my first employee {when}, a student called Ciara | Boss man! | single-hop: Who did Callum hire? ;; temporal: When did Callum take on staff?
""",
        "threads": """
b | last week | Started doing a Korean fried chicken special {when} | Ooh gochujang? || b | yesterday | The Korean chicken outsold the fish tacos {when} for the first time | The people have spoken || multi-hop: Which dish overtook Callum's original bestseller?
a | - | Niamh is a lighting designer at the Lyric Theatre | That's so cool || a | last week | Niamh's show opened {when} and her lighting got a mention in the Guardian | Amazing for her! || multi-hop: Which newspaper praised the work of Ines's girlfriend, and where does she work?
b | - | Dara's always wanted to get married on Rathlin Island | That's so romantic || b | last week | Booked the wedding {when} for next August, on the island | You did it! || multi-hop: On which island will Callum get married?
""",
    },
]
