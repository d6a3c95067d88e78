"""Hand-written content of eval/temporal_v1: six people, each telling an agent about ~18 months of their
life in dated sessions. generate.py composes it (seeded: fillers and minutes); nothing here is generated.

A subject has:

- ``sessions``: a line ``## <timestamp>`` opens a session (its first turn's time, UTC); each event turn is
  ``key | tags | dates | text``. ``dates`` is what the turn's date words mean against its own timestamp
  (``2025-05-12..2025-05-18``, one day ``2025-06-14``, several joined by `` + ``, ``-`` for none) — the
  generator checks that ``memory.temporal.mentions_resolve`` reads exactly that. ``tags`` group turns for
  the ``period`` questions ("what happened at work in …" asks the ``work`` turns; ``*`` all of them).
- ``fillers``: the subject's small talk, without a date, put between the events.
- ``facts``: ``key | fact_type | valid_from | valid_to | supersedes | contradiction | source turns | text``
  (``-`` for none); a replaced fact's ``valid_to`` is its successor's ``valid_from``. A harsh correction
  (the earlier fact was never true) carries no validity.
- ``queries``: ``kind | gold keys | check | question``; ``check`` is, for ``period`` and ``past_value``,
  the range the question means at ``now`` (then, for ``period``, the tag whose turns in that range are the
  gold), ``-`` otherwise.
"""

SUBJECTS = [
    {
        "user_id": "sam",
        "about": "Sam Okafor, backend developer: Leipzig → Berlin (March 2024) → Lisbon (May 2025); "
        "Kranich Logistics → Onda Labs; five-a-side → bouldering; sister Ada's wedding",
        "now": "2025-07-15T18:00:00Z",
        "sessions": """
## 2024-01-20T19:04:00Z
flat-signed | home | 2024-03-01 | Signed the lease on a flat in Neukölln, I'm going to move from Leipzig to Berlin on the 1st of March
football | sport | - | Still playing five-a-side with the Leipzig lot, I'll have to find a new team in Berlin
## 2024-03-09T18:40:00Z
moved-berlin | home move | 2024-02-26..2024-03-03 | Moved into the Berlin flat a week ago and I still can't find the kettle
kranich-office | work | 2024-03-04..2024-03-10 | Went into the Kranich Logistics office in Friedrichshain this week instead of working from home, the coffee is terrible
## 2024-04-27T19:12:00Z
porto-plan | trip | 2024-05-01..2024-05-31 | Booked a long weekend in Porto for May with Jonas
oncall | work | - | I'm on the on-call rota for the tracking service now, which means my phone is never off
## 2024-06-15T17:55:00Z
porto-back | trip | 2024-05-01..2024-05-31 | Porto last month was lovely, we ate francesinha three nights running
new-team | sport | 2024-06-12 | Found a five-a-side team in Kreuzberg and played my first game with them on Wednesday
## 2024-08-03T18:20:00Z
knee | sport | 2024-07-30 | Twisted my knee at football on Tuesday, only a sprain though
crete-parents | family trip | 2024-07-22..2024-07-28 | My parents went to Crete last week and sent me forty photos of the same beach
## 2024-10-05T19:30:00Z
bouldering | sport | 2024-09-30 | Started bouldering at Ostbloc on Monday, my forearms are destroyed
ada-engaged | family | 2024-09-28..2024-09-29 | My sister Ada got engaged last weekend, Tom proposed on a boat
## 2024-11-23T18:02:00Z
recruiter | work | - | Had a call with a recruiter from Onda Labs in Lisbon, no idea if I'd really leave Berlin
wedding-date | family | 2025-06-14 | Ada and Tom picked the wedding date, June 14, and it's going to be in Lagos
## 2025-01-18T19:15:00Z
offer | work | 2025-01-17 | Onda Labs offered me the staff engineer job yesterday!
moving-plan | home | 2025-05-01..2025-05-31 | We're planning to move to Lisbon in May, once the Berlin lease is up
## 2025-03-15T18:45:00Z
notice | work | 2025-03-10 + 2025-05-21..2025-05-31 | Handed in my notice at Kranich on Monday; my final day will be the end of May
wedding-fix | family | - | Correction about Ada's wedding: it's in Enugu, not Lagos, Lagos was only the engagement party
## 2025-04-26T19:05:00Z
flat-lisbon | home | 2025-05-15 | Found a flat in Alfama, we get the keys on the 15th of May
porto-again | trip | 2025-04-19..2025-04-20 | Jonas and I drove to Porto last weekend to look at neighbourhoods, but Lisbon won
## 2025-05-24T18:30:00Z
moved-lisbon | home move | 2025-05-12..2025-05-18 | Moved to Lisbon last week, the light here is unreal
leaving-do | work | 2025-05-22 | My Kranich leaving drinks were on Thursday, by video call since I'm already gone
## 2025-06-21T17:50:00Z
wedding-done | family | 2025-06-14..2025-06-15 | Ada's wedding last weekend was perfect, I cried through the speeches
new-job | work | 2025-06-02 | Started at Onda Labs on the 2nd, the team is tiny but brilliant
crete | trip | 2025-06-30..2025-07-06 | We're going to Crete in two weeks, Jonas has already packed
""",
        "fillers": [
            "Can you remind me how to say receipt in Portuguese?",
            "Ugh, the standup ran over again",
            "What's a good stretch for tight forearms?",
            "Jonas made a huge pot of jollof, there's enough for a week of lunches",
            "Remind me to call Mum back",
            "Any idea why my laptop fan sounds like a jet engine?",
            "Give me a quick recipe with chickpeas and spinach",
            "I need a new pair of climbing shoes, what should I look for?",
            "Write a short thank-you note to my team",
        ],
        "facts": """
home-leipzig | identity | 2021-09-01 | 2024-03-01 | - | - | flat-signed | Sam lives in Leipzig
home-berlin | identity | 2024-03-01 | 2025-05-15 | home-leipzig | natural | moved-berlin | Sam lives in Berlin, in a flat in Neukölln
home-lisbon | identity | 2025-05-15 | - | home-berlin | natural | flat-lisbon,moved-lisbon | Sam lives in Lisbon, in Alfama
job-kranich | identity | 2022-02-01 | 2025-06-02 | - | - | kranich-office | Sam is a backend developer at Kranich Logistics
job-mare | identity | 2025-06-02 | - | job-kranich | natural | new-job | Sam is a staff engineer at Onda Labs in Lisbon
sport-football | preference | 2019-01-01 | 2024-09-30 | - | - | football,new-team | Sam plays five-a-side football
sport-boulder | preference | 2024-09-30 | - | sport-football | natural | bouldering | Sam's sport is bouldering
wedding-lagos | world | - | - | - | - | wedding-date | Sam's sister Ada is getting married in Lagos
wedding-enugu | world | - | - | wedding-lagos | harsh | wedding-fix | Sam's sister Ada is getting married in Enugu
""",
        "queries": """
when | moved-lisbon | - | When did I move to Lisbon?
when | bouldering | - | When did I take up bouldering?
when | offer | - | When did Onda Labs offer me the job?
when | knee | - | When did I hurt my knee playing football?
when | ada-engaged | - | When did my sister get engaged?
period | porto-plan,porto-back | 2024-05-01..2024-05-31 * | What did I get up to in May 2024?
period | notice | 2025-03-01..2025-03-31 work | What happened at work in March 2025?
period | crete | 2025-07-01..2025-07-31 trip | What trips were we planning for July?
period | new-team,knee,crete-parents | 2024-06-01..2024-08-31 * | What happened last summer?
period | bouldering,ada-engaged | 2024-09-21..2024-09-30 * | What happened in late September 2024?
period | moved-lisbon,flat-lisbon,moving-plan,leaving-do,notice | 2025-05-01..2025-05-31 * | What went on this May?
before_after | job-kranich | - | Where did I work before I moved to Lisbon?
before_after | home-leipzig | - | Where did I live before Berlin?
before_after | crete | - | Where are we going on holiday after Ada's wedding?
past_value | home-berlin | 2024-06-01..2024-06-30 | Where did I live in June 2024?
past_value | home-leipzig | 2023-12-01..2024-02-29 | Where was I living in the winter of 2023?
past_value | job-kranich | 2025-03-01..2025-05-31 | What was my job last spring?
past_value | sport-football | 2024-06-01..2024-08-31 | What sport did I play in the summer of 2024?
current_value | home-lisbon | - | Where do I live?
current_value | job-mare | - | Who do I work for now?
""",
    },
    {
        "user_id": "oona",
        "about": "Oona Virtanen, physics teacher: Leeds → York (August 2024); Hollins Park School → head of "
        "science at St Aidan's; a half marathon and two marathons; vegetarian → vegan; Fiesta → electric Kia",
        "now": "2025-08-05T09:00:00Z",
        "sessions": """
## 2024-02-10T10:05:00Z
half-signup | running | 2024-04-01..2024-04-30 | I'm going to run the Leeds half in April, my first race since uni
fiesta | car | - | The Fiesta's clutch is slipping again, that car is older than some of my pupils
## 2024-03-23T11:20:00Z
job-apply | work | 2024-03-18..2024-03-24 | Applied for the head of science job at St Aidan's in York this week
interview | work | 2024-03-26 | The interview is next Tuesday, help me prepare a ten-minute lesson on circuits
## 2024-04-27T10:40:00Z
got-job | work | 2024-04-24 | Got the York job! The head called me on Wednesday
half-done | running | 2024-04-21 | Ran the Leeds half last Sunday in 1:52, my calves are still angry
## 2024-06-08T09:30:00Z
house-york | home | 2024-08-01..2024-08-31 | We're going to move to York in August, we found a terrace near Bishopthorpe Road
marathon-signup | running | 2024-10-13 | Entered the Yorkshire Marathon, it's on the 13th of October
whitby | trip | 2024-06-01..2024-06-02 | Spent last weekend in Whitby with Pekka eating far too many chips
## 2024-07-20T10:10:00Z
last-day-leeds | work | 2024-07-19 | Said goodbye to Hollins Park yesterday, the year 11s made me a cake shaped like a Van de Graaff generator
long-run | running | 2024-07-14 | Did 28 km along the canal on Sunday without stopping
## 2024-08-31T09:50:00Z
moved-york | home move | 2024-08-10 | We moved into the York house on the 10th and the cat hid under the bath for two days
start-aidans | work | 2024-09-02..2024-09-08 | I start at St Aidan's next week and I've laminated everything
## 2024-10-19T10:30:00Z
marathon-done | running | 2024-10-13 | Finished the Yorkshire Marathon on Sunday in 4:05, I could barely walk down the stairs after
ofsted | work | 2024-10-14..2024-10-20 | Ofsted came in this week and my department got through it fine
## 2024-12-14T11:00:00Z
vegan | food | 2025-01-01..2025-01-31 | I'm going vegan in January, Pekka already bought me a vegan cookbook
eero-baby | family | 2024-12-11 | My brother Eero's baby girl arrived on Wednesday, they called her Aino
## 2025-02-15T10:20:00Z
ev | car | 2025-02-10..2025-02-16 | Sold the Fiesta and picked up our electric Kia Niro this week
vegan-going | food | 2025-01-01..2025-01-31 | Six weeks vegan now, I started in January and I don't miss cheese as much as I thought
## 2025-04-12T10:00:00Z
kia-fix | car | - | Correction: the car is a Kia EV3, not a Niro, I keep mixing them up
paris-plan | trip | 2025-05-21..2025-05-31 | We're taking the Eurostar to Paris in late May for half-term
## 2025-06-07T10:30:00Z
paris-done | trip | 2025-05-26..2025-06-01 | Paris last week was wonderful, we walked about a hundred kilometres
exams | work | 2025-06-02..2025-06-08 | The year 11 physics paper was this week and the kids said it was fair
## 2025-07-19T09:45:00Z
deputy | work | 2025-09-01..2025-09-30 | I'll be acting deputy head from September, terrifying
marathon2 | running | 2025-10-12 | Entered the Yorkshire Marathon again, it's on October 12
""",
        "fillers": [
            "Give me three starter questions for a lesson on forces",
            "The cat knocked my coffee onto the marking pile",
            "What's a good vegan source of protein after a long run?",
            "Pekka is doing his sourdough thing again, the kitchen is covered in flour",
            "Can you turn these notes into a letter to parents?",
            "Remind me what the difference between speed and velocity is, for a year 7 explanation",
            "How do I stop my shoelaces coming undone when I run?",
            "Any ideas for a quick dinner with tofu and whatever's in the fridge?",
        ],
        "facts": """
home-leeds | identity | 2016-09-01 | 2024-08-10 | - | - | house-york | Oona lives in Leeds, in Chapel Allerton
home-york | identity | 2024-08-10 | - | home-leeds | natural | moved-york | Oona lives in York, near Bishopthorpe Road
job-hollins | identity | 2015-09-01 | 2024-09-01 | - | - | last-day-leeds | Oona teaches physics at Hollins Park School in Leeds
job-aidans | identity | 2024-09-01 | - | job-hollins | natural | got-job,start-aidans | Oona is head of science at St Aidan's school in York
diet-veg | preference | 2010-01-01 | 2025-01-01 | - | - | vegan | Oona is vegetarian
diet-vegan | preference | 2025-01-01 | - | diet-veg | natural | vegan-going | Oona is vegan
car-fiesta | identity | 2017-06-01 | 2025-02-12 | - | - | fiesta | Oona drives an old red Ford Fiesta
car-niro | identity | 2025-02-12 | - | car-fiesta | natural | ev | Oona drives an electric Kia Niro
car-ev3 | identity | 2025-02-12 | - | car-niro | harsh | kia-fix | Oona drives an electric Kia EV3
""",
        "queries": """
when | moved-york | - | When did we move into the York house?
when | half-done | - | When did I run the Leeds half marathon?
when | got-job | - | When did St Aidan's tell me I'd got the job?
when | eero-baby | - | When was my niece Aino born?
when | ev | - | When did we get the electric car?
period | marathon-signup,marathon-done,ofsted | 2024-10-01..2024-10-31 * | What did I get up to in October 2024?
period | half-signup,half-done | 2024-04-01..2024-04-30 running | What running did I do in April 2024?
period | start-aidans | 2024-09-01..2024-09-30 work | What happened at work last September?
period | paris-plan,paris-done | 2025-05-21..2025-05-31 trip | Where did we go at the end of May?
period | eero-baby,vegan,ev,vegan-going | 2024-12-01..2025-02-28 * | What happened over the winter?
period | whitby,last-day-leeds,long-run,house-york,moved-york | 2024-06-01..2024-08-31 * | What did I do in the summer of 2024?
before_after | job-hollins | - | Where did I teach before we moved to York?
before_after | car-fiesta | - | What car did I have before the Kia?
past_value | home-leeds | 2024-03-01..2024-03-31 | Where did I live in March 2024?
past_value | diet-veg | 2024-01-01..2024-12-31 | What was my diet in 2024?
past_value | job-hollins | 2024-03-01..2024-05-31 | Which school did I work at in spring 2024?
past_value | car-fiesta | 2024-06-01..2024-08-31 | What car was I driving last summer?
current_value | car-ev3 | - | What car do I drive?
current_value | home-york | - | Where do I live these days?
current_value | diet-vegan | - | Am I vegetarian or vegan?
""",
    },
    {
        "user_id": "rafael",
        "about": "Rafael Duarte, chef in Bristol: Easton → Clifton with Maya (September 2024); Casa Brava → sous "
        "chef at Fenn → his own supper club, Mesa; a terrier, Pimenta; family in Portugal",
        "now": "2025-09-10T20:00:00Z",
        "sessions": """
## 2024-03-17T21:10:00Z
casa-brava | work | - | Another double shift on the grill at Casa Brava, my forearms have no hair left
knife | gear | 2024-03-14 | Bought a Japanese gyuto on Thursday, my first proper knife
## 2024-05-05T21:30:00Z
portugal-plan | trip family | 2024-06-01..2024-06-30 | Going home to Portugal in June for my cousin's christening
knife-cut | work | 2024-05-03 | Sliced my thumb open on Friday during service and needed six stitches
## 2024-06-30T21:00:00Z
christening | trip family | 2024-06-15 | My cousin's christening in Braga was on the 15th, the whole family was there
mum-porto | family | - | Mum lives in Porto and keeps asking when I'll come back for good
## 2024-08-18T21:15:00Z
flat-clifton | home | 2024-09-14 | Maya and I are moving in together, we get the keys to the Clifton flat on September 14
fenn-trial | work | 2024-08-13 | Did a trial shift at Fenn on Tuesday, the tasting-menu kitchen is silent like a library
## 2024-10-06T21:40:00Z
moved-clifton | home move | 2024-09-09..2024-09-15 | We moved to Clifton three weeks ago and Maya has already repainted the hallway
fenn-offer | work | 2024-11-04 | Fenn offered me the sous chef job, I start on November 4
## 2024-11-24T21:05:00Z
fenn-first | work | 2024-11-04..2024-11-24 | I've been at Fenn since the 4th and I finally know where everything lives in the walk-in
pimenta | dog | 2024-11-16..2024-11-17 | We adopted a scruffy terrier called Pimenta last weekend
## 2025-01-19T21:20:00Z
review | work | 2025-01-15 | The Guardian reviewed Fenn on Wednesday and named my hake dish!
mum-fix | family | - | I got it wrong before: Mum lives in Braga, not Porto, it's my aunt who lives in Porto
## 2025-03-09T21:00:00Z
supper-plan | work | 2025-06-01..2025-08-31 | I'm going to leave Fenn in the summer and start my own supper club
pimenta-vet | dog | 2025-03-05 | Pimenta swallowed a sock on Wednesday, the vet bill was three hundred quid
## 2025-05-04T21:30:00Z
notice-fenn | work | 2025-05-03 + 2025-06-27 | Told Fenn yesterday that I'm leaving; my final service will be on the 27th of June
maya-birthday | family | 2025-05-17 | Maya's birthday is on the 17th, help me plan a dinner for her
## 2025-06-22T21:10:00Z
mesa-venue | work | 2025-07-05 | Found a venue for Mesa, the first supper club night is on July 5
portugal-2025 | trip family | 2025-08-01..2025-08-31 | Maya and I are going to Portugal in August, she's finally meeting my grandmother
## 2025-07-27T21:00:00Z
mesa-first | work | 2025-07-05 | The first Mesa night on the 5th was sold out, forty covers
pimenta-beach | dog | - | Pimenta has discovered the sea and now refuses to leave the water
## 2025-08-31T20:30:00Z
portugal-back | trip family | 2025-08-28 | We got back from Braga on Thursday, Grandma adored Maya
mesa-next | work | - | Mesa is booked out for the next three nights, I need a second pair of hands
""",
        "fillers": [
            "Give me a brine ratio for pork belly",
            "What's a good wine to go with grilled sardines?",
            "My feet are destroyed after service",
            "Maya says the flat smells permanently of garlic, which is fair",
            "Can you scale this custard recipe for forty people?",
            "Remind me to order more smoked paprika",
            "How do I get a dog to stop barking at the post?",
            "Write a short menu description for a tomato and peach salad",
        ],
        "facts": """
job-casa | identity | 2021-05-01 | 2024-11-04 | - | - | casa-brava | Rafael is a line cook at Casa Brava in Bristol
job-fenn | identity | 2024-11-04 | 2025-06-28 | job-casa | natural | fenn-offer,fenn-first | Rafael is sous chef at Fenn
job-mesa | identity | 2025-06-28 | - | job-fenn | natural | mesa-venue,mesa-first | Rafael runs his own supper club, Mesa
home-easton | identity | 2021-05-01 | 2024-09-14 | - | - | flat-clifton | Rafael lives in a flat in Easton, Bristol
home-clifton | identity | 2024-09-14 | - | home-easton | natural | moved-clifton | Rafael lives with Maya in a flat in Clifton, Bristol
dog | world | 2024-11-16 | - | - | - | pimenta | Rafael and Maya have a terrier called Pimenta
mum-porto | world | - | - | - | - | mum-porto | Rafael's mother lives in Porto
mum-braga | world | - | - | mum-porto | harsh | mum-fix | Rafael's mother lives in Braga
""",
        "queries": """
when | pimenta | - | When did we adopt Pimenta?
when | knife-cut | - | When did I cut my thumb at work?
when | review | - | When did the Guardian review Fenn?
when | moved-clifton | - | When did we move to Clifton?
when | mesa-first,mesa-venue | - | When was the first Mesa night?
period | portugal-plan,christening,mum-porto | 2024-06-01..2024-06-30 * | What happened in June 2024?
period | fenn-offer,fenn-first | 2024-11-01..2024-11-30 work | What was going on at work in November 2024?
period | portugal-2025,portugal-back | 2025-08-01..2025-08-31 trip | Where did we go last month?
period | pimenta-vet | 2025-03-01..2025-03-10 dog | What happened with the dog in early March?
period | mesa-venue,mesa-first | 2025-07-01..2025-07-10 * | What happened in early July?
period | casa-brava,knife,knife-cut | 2024-03-01..2024-05-31 * | What was I up to in the spring of 2024?
before_after | job-casa | - | Where did I work before Fenn?
before_after | home-easton | - | Where did I live before moving in with Maya?
before_after | job-mesa | - | What have I been doing since I left Fenn?
past_value | job-fenn | 2025-03-01..2025-03-31 | What was my job in March 2025?
past_value | home-easton | 2024-06-01..2024-08-31 | Where was I living in the summer of 2024?
past_value | job-casa | 2024-03-01..2024-05-31 | Where did I cook in the spring of 2024?
past_value | home-easton | 2023-01-01..2023-12-31 | Where did I live in 2023?
current_value | job-mesa | - | What do I do for work?
current_value | mum-braga | - | Where does my mother live?
""",
    },
    {
        "user_id": "zanele",
        "about": "Zanele Dube, doctor in Sheffield: finals → foundation rotations (A&E, cardiology, GP, then "
        "paediatrics); a student house in Crookes → her own flat in Kelham Island; brother Sipho",
        "now": "2025-10-01T18:00:00Z",
        "sessions": """
## 2024-04-14T20:00:00Z
finals | study | 2024-05-13 | Finals start on May 13, I'm living on flashcards
crookes | home | - | Our student house in Crookes has mould in the bathroom again
## 2024-06-02T19:30:00Z
passed | study | 2024-05-29 | Results came out on Wednesday, I passed finals!!
graduation-plan | study family | 2024-07-17 | Graduation is on the 17th of July, Mum's flying in from Bulawayo
## 2024-07-21T19:45:00Z
graduated | study family | 2024-07-17 | Graduated on Wednesday! Mum cried more than I did
flat-kelham | home | 2024-09-01 | Got a flat in Kelham Island, I'm moving in on the 1st of September
## 2024-08-25T20:10:00Z
first-shift | work | 2024-08-07 | Started in A&E at the Northern General on the 7th, it's been a blur
nights | work | 2024-08-26..2024-09-01 | I'm on nights all next week, send snacks
## 2024-10-13T19:00:00Z
moved-kelham | home move | 2024-09-01..2024-09-30 | Moved into the Kelham flat last month and I've finally bought curtains
cardiac-arrest | work | 2024-10-10 | Ran my first cardiac arrest call on Thursday, we got him back
## 2024-12-08T20:20:00Z
cardio-start | work | 2024-12-04 | Switched to cardiology on Wednesday, actual lunch breaks
sipho-durban | family | - | My brother Sipho in Durban wants me to visit soon
## 2025-01-26T19:40:00Z
bulawayo | trip family | 2024-12-23..2025-01-12 | Spent a week with family in Bulawayo a few weeks ago
sipho-fix | family | - | Sorry, Sipho lives in Johannesburg, not Durban, I don't know why I said Durban
## 2025-03-16T20:00:00Z
gp-next | work | 2025-04-02 | My GP placement in Hillsborough starts on April 2
echo-course | study | 2025-03-08..2025-03-09 | Did an echo course in Leeds last weekend
## 2025-05-11T19:30:00Z
gp-going | work | 2025-04-02..2025-05-11 | Been at the GP surgery since April 2 and I love seeing the same patients again
tenk | running | 2025-05-04 | Ran the Sheffield 10k last Sunday in 54 minutes
## 2025-06-29T19:50:00Z
fy2-match | work | 2025-06-25 | Found out on Wednesday that I got paediatrics at the Children's hospital for FY2
jozi-plan | trip family | 2025-07-01..2025-07-31 | I'm going to Johannesburg in July to see Sipho
## 2025-08-24T19:15:00Z
paeds-start | work | 2025-08-06 | Started paediatrics on the 6th, the kids are so much braver than adults
jozi-back | trip family | 2025-07-01..2025-07-31 | Johannesburg last month was the best, Sipho showed me everything
## 2025-09-14T19:00:00Z
exam-plan | study | 2025-11-01..2025-11-30 | I'm going to sit MRCPCH part one in November
bike | home | 2025-09-11 | My bike got stolen outside the hospital on Thursday
""",
        "fillers": [
            "Explain the CHADS-VASc score like I'm tired, because I am",
            "What can I cook in fifteen minutes after a twelve-hour shift?",
            "My pager has a battery life of about four minutes",
            "Give me a good podcast for the drive in",
            "How do I say no to extra shifts without feeling guilty?",
            "Remind me to renew my GMC registration fee",
            "Mum sent a voice note that is eleven minutes long",
            "Quiz me on paediatric drug doses",
        ],
        "facts": """
rot-student | identity | 2019-09-01 | 2024-08-07 | - | - | finals | Zanele is a medical student at the University of Sheffield
rot-ae | identity | 2024-08-07 | 2024-12-04 | rot-student | natural | first-shift | Zanele is a foundation doctor (FY1) in A&E at the Northern General
rot-cardio | identity | 2024-12-04 | 2025-04-02 | rot-ae | natural | cardio-start | Zanele is an FY1 doctor on the cardiology rotation
rot-gp | identity | 2025-04-02 | 2025-08-06 | rot-cardio | natural | gp-next,gp-going | Zanele is an FY1 doctor on a GP placement in Hillsborough
rot-paeds | identity | 2025-08-06 | - | rot-gp | natural | fy2-match,paeds-start | Zanele is an FY2 doctor in paediatrics at Sheffield Children's Hospital
home-crookes | identity | 2020-09-01 | 2024-09-01 | - | - | crookes | Zanele lives in a shared student house in Crookes
home-kelham | identity | 2024-09-01 | - | home-crookes | natural | flat-kelham,moved-kelham | Zanele lives in her own flat in Kelham Island, Sheffield
sipho-durban | world | - | - | - | - | sipho-durban | Zanele's brother Sipho lives in Durban
sipho-joburg | world | - | - | sipho-durban | harsh | sipho-fix | Zanele's brother Sipho lives in Johannesburg
""",
        "queries": """
when | graduated | - | When did I graduate?
when | first-shift | - | When did I start in A&E?
when | cardiac-arrest | - | When did I run my first cardiac arrest call?
when | fy2-match | - | When did I find out about my FY2 job?
when | bike | - | When was my bike stolen?
period | cardio-start | 2024-12-01..2024-12-31 work | What happened at work in December 2024?
period | graduation-plan,graduated | 2024-07-01..2024-07-31 * | What did I get up to in July 2024?
period | bike | 2025-09-01..2025-09-30 * | What happened last month?
period | paeds-start | 2025-08-01..2025-08-10 * | What was I doing in early August?
period | echo-course,gp-next,gp-going,tenk | 2025-03-01..2025-05-31 * | What happened in the spring?
period | exam-plan | 2025-11-01..2025-11-30 * | What are my plans for November?
before_after | rot-ae | - | Which rotation was I on before cardiology?
before_after | rot-paeds | - | What did I move on to after the GP placement?
before_after | home-crookes | - | Where did I live before Kelham Island?
past_value | rot-ae | 2024-10-01..2024-10-31 | What rotation was I doing in October 2024?
past_value | rot-cardio | 2025-01-01..2025-01-31 | Which job did I have in January 2025?
past_value | rot-gp | 2025-05-01..2025-05-31 | Where was I working in May 2025?
past_value | home-crookes | 2024-03-01..2024-05-31 | Where did I live in the spring of 2024?
past_value | rot-student | 2023-01-01..2023-12-31 | What was I doing in 2023?
current_value | rot-paeds | - | What's my current job?
current_value | sipho-joburg | - | Where does my brother live?
""",
    },
    {
        "user_id": "mei",
        "about": "Mei Tan, product designer: Toronto → Montreal with Theo (February 2025); Larkspur → freelance → "
        "design lead at Pelican Health; pottery; French classes; a cat",
        "now": "2025-07-28T15:00:00Z",
        "sessions": """
## 2024-02-06T22:00:00Z
larkspur | work | - | Larkspur wants the whole checkout redesigned again, I'm so tired of checkout flows
pottery-start | hobby | 2024-02-05 | Had my first pottery class yesterday and everything I made collapsed
## 2024-03-21T21:30:00Z
japan-plan | trip | 2024-04-01..2024-04-30 | Booked flights to Japan for April, cherry blossom season!
cat-mochi | cat | - | Our cat Mochi has learned to open the cupboard with the treats
## 2024-05-09T21:00:00Z
japan-back | trip | 2024-04-01..2024-04-30 | Japan last month was a dream, Kyoto especially
passed-over | work | 2024-05-07 | Got passed over for the senior role at Larkspur on Tuesday, honestly it stung
## 2024-07-02T21:15:00Z
quit-plan | work | 2024-09-01..2024-11-30 | I'm going to quit Larkspur and go freelance in the fall
priya-wedding | social | 2024-06-29..2024-06-30 | Went to Priya's wedding last weekend, I danced until my feet bled
## 2024-08-20T21:00:00Z
kiln | hobby | 2024-08-17..2024-08-18 | Fired my first glazed bowls over the weekend and none of them cracked
resign | work | 2024-08-19 + 2024-09-30 | Handed in my resignation at Larkspur yesterday, my final day will be September 30
## 2024-10-15T20:45:00Z
freelance-first | work | 2024-10-01..2024-10-10 | Went freelance at the start of the month and I've already landed a bakery rebrand
french | study | 2024-10-14 | Signed up for French classes, the first one was yesterday
## 2024-12-03T21:10:00Z
montreal-plan | home | 2025-02-01..2025-02-28 | Theo and I are going to move to Montreal in February
cat-fix | cat | - | Wait, I told you the cat's name wrong: she's Miso, not Mochi, Mochi was my sister's cat
## 2025-01-21T21:30:00Z
movers | home | 2025-01-31 | The movers come on Friday the 31st, the flat is a maze of boxes
bakery-launch | work | 2025-01-16 | The bakery rebrand launched on Thursday and they sold out of tote bags
## 2025-03-11T21:00:00Z
moved-montreal | home move | 2025-02-01 | We moved to Montreal on the 1st of February and it's been minus twenty ever since
pelican-interview | work | 2025-03-13 | I have a final interview with Pelican Health on Thursday
## 2025-04-29T20:30:00Z
pelican-offer | work | 2025-05-05 | Pelican Health hired me as design lead, I start on May 5
studio-mtl | hobby | 2025-04-26..2025-04-27 | Found a ceramics studio in Mile End and threw pots there over the weekend
## 2025-06-17T21:00:00Z
pelican-first | work | 2025-05-05..2025-06-17 | Been at Pelican since May 5 and the team actually listens to research
quebec-plan | trip | 2025-07-01..2025-07-31 | We're going to Quebec City in July for Theo's birthday
## 2025-07-15T21:00:00Z
quebec-back | trip | 2025-07-12..2025-07-13 | Quebec City last weekend was gorgeous, we walked the old town walls
french-exam | study | 2025-06-01..2025-06-30 | Passed my French B1 exam in June
""",
        "fillers": [
            "Can you check this microcopy for a sign-up button?",
            "Miso knocked a mug off the shelf just to watch it fall",
            "What's the French for a late invoice?",
            "Theo made dumplings from scratch, the kitchen looks like a flour bomb went off",
            "Give me five names for a ceramics shop",
            "How do I price a logo for a small business?",
            "Remind me to back up the portfolio drive",
            "Any good stretches for a designer's neck?",
        ],
        "facts": """
job-larkspur | identity | 2021-03-01 | 2024-10-01 | - | - | larkspur,passed-over | Mei is a product designer at Larkspur
job-freelance | identity | 2024-10-01 | 2025-05-05 | job-larkspur | natural | freelance-first | Mei works as a freelance designer
job-pelican | identity | 2025-05-05 | - | job-freelance | natural | pelican-offer,pelican-first | Mei is design lead at Pelican Health
home-toronto | identity | 2019-08-01 | 2025-02-01 | - | - | montreal-plan | Mei lives in Toronto, in Leslieville
home-montreal | identity | 2025-02-01 | - | home-toronto | natural | moved-montreal | Mei lives in Montreal with Theo
cat-mochi | world | - | - | - | - | cat-mochi | Mei's cat is called Mochi
cat-miso | world | - | - | cat-mochi | harsh | cat-fix | Mei's cat is called Miso
""",
        "queries": """
when | freelance-first | - | When did I go freelance?
when | moved-montreal | - | When did we move to Montreal?
when | pottery-start | - | When was my first pottery class?
when | resign | - | When did I hand in my resignation at Larkspur?
when | bakery-launch | - | When did the bakery rebrand launch?
period | japan-plan,japan-back | 2024-04-01..2024-04-30 * | What did I do in April 2024?
period | quit-plan,resign,freelance-first | 2024-09-01..2024-11-30 work | What happened at work in the fall of 2024?
period | quebec-plan,quebec-back | 2025-07-01..2025-07-31 trip | What trips have we taken this month?
period | kiln | 2024-08-11..2024-08-20 hobby | What did I make in mid-August 2024?
period | moved-montreal | 2025-02-01..2025-02-10 home | What happened in early February?
period | french | 2024-10-01..2024-10-31 study | What was I learning in October 2024?
before_after | job-larkspur | - | Where did I work before I went freelance?
before_after | home-toronto | - | Where did we live before Montreal?
past_value | job-larkspur | 2024-06-01..2024-08-31 | Where did I work in the summer of 2024?
past_value | job-freelance | 2025-01-01..2025-01-31 | What was my job in January 2025?
past_value | home-toronto | 2024-01-01..2024-12-31 | Where did I live in 2024?
past_value | job-freelance | 2024-12-01..2025-02-28 | What was I doing for work last winter?
current_value | job-pelican | - | Where do I work?
current_value | cat-miso | - | What's my cat called?
current_value | home-montreal | - | Which city do I live in?
""",
    },
    {
        "user_id": "tobias",
        "about": "Tobias Brandt, retired engineer: the family house in Hamburg → a flat in Lüneburg near his "
        "daughter Katrin (April 2025); ramipril → amlodipine; the Repair Café → reading at the library",
        "now": "2025-06-25T08:00:00Z",
        "sessions": """
## 2023-12-09T09:00:00Z
repair-cafe | volunteer | - | Fixed three toasters and a lamp at the Repair Café, people are so happy when things work again
bp-check | health | 2023-12-12 | The doctor wants to check my blood pressure on Tuesday
## 2024-02-03T09:30:00Z
lene-born | family | 2024-01-29 | Katrin's baby arrived on Monday, a little girl called Lena
stairs | home | - | The stairs in this house get steeper every year, I swear
## 2024-04-13T08:45:00Z
beans | garden | 2024-04-08..2024-04-14 | Planted the beans this week, far too early as usual
baltic-plan | trip | 2024-06-01..2024-06-30 | We're going to the Baltic coast in June, a cottage in Zingst
## 2024-06-22T08:30:00Z
baltic-back | trip | 2024-06-10..2024-06-16 | Back from Zingst, we spent last week watching the waves
lene-visit | family | 2024-06-18 | Katrin visited with little Lena on Tuesday, she's crawling already
## 2024-08-31T09:00:00Z
cough | health | - | This dry cough won't go away, I think it's the ramipril
courgettes | garden | 2024-08-24..2024-08-25 | Harvested forty courgettes last weekend, the neighbours hide when they see me
## 2024-09-21T09:15:00Z
med-switch | health | 2024-09-10 | Dr Albers switched me to amlodipine on the 10th and the cough is already gone
katrin-job | family | - | Katrin got the job at the hospital in Lüneburg, she's moving the family there
## 2024-11-16T09:00:00Z
house-decision | home | 2025-03-01..2025-05-31 | I've decided to sell the house and move to Lüneburg in the spring
fall | health | 2024-11-11 | Slipped on wet leaves on Monday, only a bruised hip
## 2025-01-25T09:00:00Z
house-sold | home | 2025-01-22 | We signed the sale of the house on Wednesday, forty years of memories in boxes
flat-found | home | 2025-04-01 | The flat in Lüneburg is ours from the 1st of April
## 2025-03-22T09:00:00Z
repair-end | volunteer | 2025-03-15 | My final Repair Café shift was last Saturday, they gave me a golden screwdriver
lene-fix | family | - | I've been spelling it wrong all along: my granddaughter is Lene, not Lena
## 2025-04-26T09:30:00Z
moved | home move | 2025-03-31..2025-04-06 | Moved to Lüneburg three weeks ago and Lene comes round every afternoon
library | volunteer | 2025-04-15 | Started reading to children at the Lüneburg library on Tuesday the 15th
## 2025-06-07T08:40:00Z
balcony | garden | - | No garden anymore, just three pots of tomatoes on the balcony
baltic-2025 | trip | 2025-07-01..2025-07-31 | Katrin wants to take us all to Zingst again in July
checkup | health | 2025-06-03 | My blood pressure check on Tuesday was the best in years
""",
        "fillers": [
            "How do I send a photo to Katrin on this new phone?",
            "Read me the weather for the week, please",
            "What is a good soup for a cold day?",
            "The crossword was impossible, seven across defeated me",
            "Remind me to water the tomatoes",
            "Can you explain what a heat pump actually does?",
            "Write a birthday card verse for an old friend",
            "Which exercises are good for stiff knees?",
        ],
        "facts": """
home-hamburg | identity | 1985-06-01 | 2025-04-01 | - | - | stairs,house-decision | Tobias lives in the family house in Hamburg-Eimsbüttel
home-lueneburg | identity | 2025-04-01 | - | home-hamburg | natural | flat-found,moved | Tobias lives in a flat in Lüneburg, near his daughter Katrin
med-ramipril | constraint | 2020-01-01 | 2024-09-10 | - | - | cough | Tobias takes ramipril for his blood pressure
med-amlo | constraint | 2024-09-10 | - | med-ramipril | natural | med-switch | Tobias takes amlodipine for his blood pressure (ramipril gave him a cough)
vol-repair | preference | 2016-01-01 | 2025-04-15 | - | - | repair-cafe,repair-end | Tobias volunteers at the Repair Café in Eimsbüttel
vol-library | preference | 2025-04-15 | - | vol-repair | natural | library | Tobias volunteers reading to children at the Lüneburg library
grand-lena | world | - | - | - | - | lene-born | Tobias's granddaughter is called Lena
grand-lene | world | - | - | grand-lena | harsh | lene-fix | Tobias's granddaughter is called Lene
""",
        "queries": """
when | lene-born | - | When was my granddaughter born?
when | med-switch | - | When did I switch to amlodipine?
when | moved | - | When did I move to Lüneburg?
when | fall | - | When did I slip on the leaves?
when | house-sold | - | When did we sign the sale of the house?
period | baltic-plan,baltic-back,lene-visit | 2024-06-01..2024-06-30 * | What happened last June?
period | courgettes | 2024-08-01..2024-08-31 garden | What did I do in the garden in August 2024?
period | med-switch | 2024-09-01..2024-09-30 health | What happened with my health in September 2024?
period | flat-found,moved,library | 2025-04-01..2025-04-30 * | What did I do in April?
period | baltic-2025 | 2025-07-01..2025-07-31 trip | What are we planning for July?
period | repair-cafe,bp-check,lene-born,stairs | 2023-12-01..2024-02-29 * | What happened in the winter of 2023?
before_after | med-ramipril | - | Which blood pressure pill did I take before amlodipine?
before_after | vol-repair | - | Where did I volunteer before moving to Lüneburg?
past_value | med-ramipril | 2024-06-01..2024-08-31 | What medication was I on in the summer of 2024?
past_value | home-hamburg | 2025-01-01..2025-01-31 | Where was I living in January 2025?
past_value | vol-repair | 2024-01-01..2024-12-31 | Where did I volunteer in 2024?
past_value | home-hamburg | 2024-09-01..2024-11-30 | Where did I live in the autumn of 2024?
current_value | med-amlo | - | What do I take for my blood pressure?
current_value | grand-lene | - | What's my granddaughter's name?
current_value | vol-library | - | Where do I volunteer now?
""",
    },
]
